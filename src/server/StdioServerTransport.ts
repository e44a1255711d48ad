/**
 * Serves one Handler over the process's stdin and stdout (NDJSON).
 *
 * Stdout carries framed messages only: while serving, `console.log` and its
 * siblings are sent to stderr and the Effect logger writes to stderr. The
 * server is a scoped resource with one owner of stdin: a second server on
 * the same stdin fails with `StdioAlreadyServing` instead of stealing lines.
 * When stdin ends, the replies in flight are written and the server
 * completes, so a process built on `run` exits instead of lingering.
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import type * as Scope from "effect/Scope"
import * as Stdio from "effect/Stdio"
import * as Stream from "effect/Stream"
import { DEFAULT_MAX_MESSAGE_BYTES } from "../Defaults.ts"
import * as JsonRpc from "../JsonRpc.ts"
import { TransportClosed } from "../McpError.ts"
import * as BatchWriter from "../internal/BatchWriter.ts"
import * as LineFramer from "../internal/LineFramer.ts"
import * as ServerDispatch from "./internal/ServerDispatch.ts"
import * as ServerSession from "./internal/ServerSession.ts"
import * as Metrics from "../observability/Metrics.ts"
import type { Handler, HandlerContext } from "./Handler.ts"

/**
 * Limits, timeouts and console handling of a stdio server.
 *
 * @since 0.1.0
 * @category models
 */
export interface StdioServerOptions {
  /** Largest accepted input line in bytes; longer lines are answered with -32600 and skipped. Default 10 MiB. */
  readonly maxMessageBytes?: number | undefined
  /** Accept JSON-RPC batches (protocol 2025-03-26). Default `true`; later revisions send none. */
  readonly allowBatch?: boolean | undefined
  /** Entries a batch may hold; a longer batch gets one -32600 reply and none of it runs. Default 100. */
  readonly maxBatchSize?: number | undefined
  /** Send `console.log/info/debug/dir/table/...` to stderr while serving. Default `true`. */
  readonly redirectConsole?: boolean | undefined
  /** After stdin ends, how long in-flight requests may still run before they are interrupted. Default 10 seconds. */
  readonly shutdownGracePeriod?: Duration.Input | undefined
  /** Timeout of requests the server sends the client through `HandlerContext.request`. Default 60 seconds. */
  readonly clientRequestTimeout?: Duration.Input | undefined
  /** Messages waiting for stdout before writers wait (backpressure). Default 1024. */
  readonly outputBuffer?: number | undefined
}

/**
 * A second server tried to read a stdin that another server in this process is already reading.
 *
 * @since 0.1.0
 * @category errors
 */
export class StdioAlreadyServing extends Data.TaggedError("StdioAlreadyServing")<{}> {
  override get message(): string {
    return "stdin is already being served by another StdioServerTransport in this process"
  }
}

/**
 * A serving stdio server: its channel to the client, its load, and how it stops.
 *
 * @since 0.1.0
 * @category models
 */
export interface StdioServerShape {
  /** Server-initiated traffic outside any request: notifications and requests to the client. */
  readonly context: HandlerContext
  /** Requests and batches being served, plus notifications waiting for the handler. */
  readonly inFlight: Effect.Effect<number>
  /**
   * Completes when serving has stopped: stdin ended (replies in flight written), stdin or stdout
   * failed, or the scope closed. The value says which.
   */
  readonly awaitDone: Effect.Effect<TransportClosed>
  /**
   * Stops serving the way the end of stdin does: no more input is read,
   * requests in flight finish (within the grace period), their replies are
   * written, then `awaitDone` completes with the first reason given. For a
   * server whose work ended elsewhere (a bridge whose upstream went away).
   */
  readonly stop: (reason: TransportClosed) => Effect.Effect<TransportClosed>
}

/**
 * The stdio server as a service, provided by `layer`.
 *
 * @example
 * ```ts
 * import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
 * import * as NodeStdio from "@effect/platform-node/NodeStdio"
 * import * as Effect from "effect/Effect"
 * import * as Layer from "effect/Layer"
 * import * as McpServer from "effect-mcp-transport/server/McpServer"
 * import * as StdioServerTransport from "effect-mcp-transport/server/StdioServerTransport"
 *
 * const server = McpServer.make({ serverInfo: { name: "example", version: "1.0.0" } })
 *
 * const StdioLive = Layer.unwrap(
 *   Effect.map(McpServer.toHandler(server), (handle) => StdioServerTransport.layer(handle.handler))
 * )
 *
 * // Serves until stdin ends; meanwhile, anything may talk to the client outside a request.
 * const program = Effect.gen(function*() {
 *   const stdio = yield* StdioServerTransport.StdioServer
 *   yield* stdio.context.notify("notifications/message", { level: "info", data: "serving" })
 *   yield* stdio.awaitDone
 * })
 *
 * program.pipe(
 *   Effect.provide(StdioLive),
 *   Effect.provide([NodeStdio.layer, StdioServerTransport.layerLogger]),
 *   NodeRuntime.runMain
 * )
 * ```
 *
 * @since 0.1.0
 * @category services
 */
export class StdioServer extends Context.Service<StdioServer, StdioServerShape>()(
  "effect-mcp-transport/StdioServer"
) {}

/**
 * The default `shutdownGracePeriod`: how long requests in flight may run after stdin ends.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_SHUTDOWN_GRACE_PERIOD: Duration.Input = "10 seconds"

// ---------------------------------------------------------------------------
// One owner per stdin

const claimed = new WeakSet<object>()

const claim = (stdin: object) =>
  Effect.acquireRelease(
    Effect.suspend(() => {
      if (claimed.has(stdin)) return Effect.fail(new StdioAlreadyServing())
      claimed.add(stdin)
      return Effect.void
    }),
    () => Effect.sync(() => void claimed.delete(stdin))
  )

// ---------------------------------------------------------------------------
// Console redirection (refcounted: nested servers restore once, in order)

const STDOUT_METHODS = [
  "log",
  "info",
  "debug",
  "dir",
  "dirxml",
  "table",
  "group",
  "groupCollapsed",
  "groupEnd",
  "count",
  "countReset",
  "time",
  "timeLog",
  "timeEnd"
] as const

type ConsoleMethods = Record<(typeof STDOUT_METHODS)[number], (...args: Array<unknown>) => void>

let redirects = 0
let saved: Partial<ConsoleMethods> | undefined

const stderrConsole = (): ConsoleMethods => {
  const NodeConsole = (console as unknown as { Console?: new(o: object) => ConsoleMethods }).Console
  const stderr = (globalThis as { process?: { stderr?: unknown } }).process?.stderr
  if (NodeConsole !== undefined && stderr !== undefined) {
    return new NodeConsole({ stdout: stderr, stderr })
  }
  // Elsewhere keep the formatting of console.error for the plain methods.
  const error = (...args: Array<unknown>) => console.error(...args)
  const out = {} as Record<string, (...args: Array<unknown>) => void>
  for (const m of STDOUT_METHODS) out[m] = error
  return out as ConsoleMethods
}

const redirectConsole = Effect.acquireRelease(
  Effect.sync(() => {
    if (redirects++ > 0) return
    const target = stderrConsole()
    const c = console as unknown as ConsoleMethods
    saved = {}
    for (const m of STDOUT_METHODS) {
      saved[m] = c[m]
      const f = target[m]
      c[m] = typeof f === "function" ? f.bind(target) : c[m]
    }
  }),
  () =>
    Effect.sync(() => {
      if (--redirects > 0 || saved === undefined) return
      const c = console as unknown as ConsoleMethods
      for (const m of STDOUT_METHODS) {
        const f = saved[m]
        if (f !== undefined) c[m] = f
      }
      saved = undefined
    })
)

// ---------------------------------------------------------------------------

const toMillis = (input: Duration.Input): number => {
  const d = Duration.fromInputUnsafe(input)
  return Duration.isFinite(d) ? Duration.toMillis(d) : Number.POSITIVE_INFINITY
}

/**
 * Starts serving `handler` on stdin/stdout for the life of the scope. Fails
 * with `StdioAlreadyServing` when another server reads the same stdin.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <R>(
  handler: Handler<R>,
  options: StdioServerOptions = {}
): Effect.Effect<StdioServerShape, StdioAlreadyServing, Stdio.Stdio | Scope.Scope | R> =>
  makeServer(handler, options).pipe(Effect.provideService(Logger.LogToStderr, true))

const makeServer = Effect.fnUntraced(function*<R>(
  handler: Handler<R>,
  options: StdioServerOptions
): Effect.fn.Return<StdioServerShape, StdioAlreadyServing, Stdio.Stdio | Scope.Scope | R> {
  const stdio = yield* Stdio.Stdio
  yield* claim(stdio.stdin)
  if (options.redirectConsole !== false) yield* redirectConsole

  const maxBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES
  const grace = options.shutdownGracePeriod ?? DEFAULT_SHUTDOWN_GRACE_PERIOD
  const done = yield* Deferred.make<TransportClosed>()
  let stopped: TransportClosed | undefined

  // --- output: the replies of one tick go out in one stdout write (BatchWriter),
  // or every 16 during a burst, so that the client works on the first replies
  // while later ones are produced; after the first write since stdin's last
  // read, the replies of one event-loop turn share a write; past
  // `outputBuffer` lines waiting for a busy stdout, writers wait.
  const output = BatchWriter.make<TransportClosed>(options.outputBuffer ?? 1024, { coalesceTurn: true })

  const writeLine = (line: string): Effect.Effect<boolean> => {
    if (stopped !== undefined) return Effect.succeed(false)
    if (output.tryWrite(line)) return Effect.succeed(true)
    return Effect.match(output.write(line), { onFailure: () => false, onSuccess: () => true })
  }

  const send = (message: JsonRpc.JsonRpcMessage): Effect.Effect<void, TransportClosed> =>
    Effect.suspend(() => {
      if (stopped !== undefined) return Effect.fail(stopped)
      let line: string
      try {
        line = LineFramer.encodeLine(message)
      } catch (error) {
        return Effect.die(error)
      }
      return Effect.flatMap(writeLine(line), (accepted) =>
        accepted ? Effect.void : Effect.fail(stopped ?? new TransportClosed({ reason: "stdout closed" })))
    })

  const reply = (r: JsonRpc.JsonRpcResponse | ReadonlyArray<JsonRpc.JsonRpcResponse>): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (stopped !== undefined) return Effect.void
      const line = ServerDispatch.encodeReply(r) + "\n"
      return output.tryWrite(line) ? Effect.void : Effect.ignore(output.write(line))
    })

  const stop = (reason: TransportClosed) =>
    Effect.suspend(() => {
      if (stopped === undefined) stopped = reason
      output.close(stopped)
      return Deferred.succeed(done, stopped)
    })

  const writer = yield* output.run(stdio.stdout()).pipe(
    Effect.catch((error) =>
      Effect.logWarning("stdio server: writing to stdout failed; stopping", error).pipe(
        Effect.andThen(stop(new TransportClosed({ reason: "stdout failed", cause: error })))
      )
    ),
    Effect.forkScoped
  )

  // --- protocol
  const clientTimeout = options.clientRequestTimeout === undefined ? undefined : toMillis(options.clientRequestTimeout)
  const session = yield* ServerSession.make({
    handler,
    send,
    allowBatch: options.allowBatch ?? true,
    maxBatchSize: options.maxBatchSize,
    decideEra: true,
    sharedDispatcher: true,
    defaultRequestTimeoutMs: clientTimeout,
    onHandlerError: (message, cause) =>
      Effect.logWarning(`stdio server: handler for ${message.method} failed; answering -32603`, cause)
  }).pipe(Metrics.withNetworkTransport("pipe"))
  const dispatch = yield* ServerDispatch.make({ session, reply })

  // --- input
  const framer = LineFramer.make(maxBytes)
  const frames: Array<LineFramer.Frame> = []
  const collect = (frame: LineFramer.Frame) => void frames.push(frame)
  const handleFrame = (frame: LineFramer.Frame): Effect.Effect<void> => {
    if (frame._tag === "Line") return dispatch.push(frame.text)
    return Effect.logWarning(`stdio server: skipped an input line of at least ${frame.size} bytes (limit ${maxBytes})`)
      .pipe(Effect.andThen(reply(ServerDispatch.tooLarge(maxBytes, frame.size))))
  }
  // A chunk usually holds one line (a client waiting for each reply): no loop for it.
  const takeFrames = (): Effect.Effect<void> => {
    if (frames.length === 0) return Effect.void
    if (frames.length === 1) return handleFrame(frames.pop()!)
    return Effect.forEach(frames.splice(0), handleFrame, { discard: true })
  }
  const flushFrames = Effect.suspend(takeFrames)

  const read: Effect.Effect<TransportClosed> = stdio.stdin.pipe(
    Stream.runForEachArray((chunks) => {
      output.newTurn()
      for (const chunk of chunks) framer.push(chunk, collect)
      return takeFrames()
    }),
    Effect.andThen(Effect.sync(() => framer.end(collect))),
    Effect.andThen(flushFrames),
    Effect.as(new TransportClosed({ reason: "stdin ended" })),
    Effect.catch((error) =>
      Effect.as(
        Effect.logWarning("stdio server: reading stdin failed; stopping", error),
        new TransportClosed({ reason: "stdin failed", cause: error })
      )
    )
  )

  const shutdown = (reason: TransportClosed) =>
    Effect.gen(function*() {
      // The client can no longer answer requests we sent it.
      yield* session.closeOutgoing(reason)
      // Long-lived requests (open listens) end with their final replies instead of running out the grace period.
      if (handler.shutdown !== undefined) yield* handler.shutdown
      const finished = yield* dispatch.drain(grace)
      if (!finished) {
        yield* Effect.logWarning(
          `stdio server: requests still running ${Duration.format(Duration.fromInputUnsafe(grace))} after stdin ended; interrupting them`
        )
        yield* session.close(reason)
        yield* dispatch.drain(Duration.seconds(1))
      }
      // The connection is over even if the scope lives on (a layer): the handler drops its state now.
      yield* session.end(reason)
      // Everything queued so far is written before we report done, unless the
      // client stopped reading too: then the grace period bounds the wait.
      output.close(new TransportClosed({ reason: "stdout closed" }))
      const flushed = yield* Fiber.await(writer).pipe(Effect.timeoutOption(grace))
      if (flushed._tag === "None") yield* Effect.logWarning("stdio server: stdout did not drain after stdin ended")
      yield* stop(reason)
    })

  const stopRequested = yield* Deferred.make<TransportClosed>()
  yield* Effect.raceFirst(read, Deferred.await(stopRequested)).pipe(Effect.flatMap(shutdown), Effect.forkScoped)

  // Registered last, so it runs first: nothing is accepted for stdout once the scope starts closing.
  yield* Effect.addFinalizer(() => stop(new TransportClosed({ reason: "server scope closed" })))

  return {
    context: session.context,
    inFlight: dispatch.busy,
    awaitDone: Deferred.await(done),
    stop: (reason) => Effect.andThen(Deferred.succeed(stopRequested, reason), Deferred.await(done))
  }
})

/**
 * Serves until stdin ends (replies in flight written) or stdout fails, then
 * completes: the program's main effect for a stdio MCP server.
 *
 * @since 0.1.0
 * @category utils
 */
export const run = <R>(
  handler: Handler<R>,
  options?: StdioServerOptions
): Effect.Effect<TransportClosed, StdioAlreadyServing, Stdio.Stdio | R> =>
  Effect.scoped(Effect.flatMap(make(handler, options), (server) => server.awaitDone))

/**
 * The server as a service, for programs that also push notifications from elsewhere.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <R>(
  handler: Handler<R>,
  options?: StdioServerOptions
): Layer.Layer<StdioServer, StdioAlreadyServing, Stdio.Stdio | R> => Layer.effect(StdioServer, make(handler, options))

/**
 * Routes the default logger to stderr for the whole program (the server does
 * this itself while serving; this covers logs before and after).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerLogger: Layer.Layer<never> = Layer.succeed(Logger.LogToStderr, true)
