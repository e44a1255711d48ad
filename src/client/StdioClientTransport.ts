/**
 * The stdio client transport: spawns an MCP server as a child process and
 * speaks newline-delimited JSON-RPC over its stdin and stdout.
 *
 * Routing, correlation and state live in ClientCore, the process in StdioProcess;
 * this module owns the bytes. The request path does no fiber work of its own: a
 * request is encoded and appended to this tick's batch (BatchWriter), which
 * reaches the server's stdin as one write (one per 16 lines in a burst), and its caller waits on its
 * correlation entry (`callBuffered`). Between one write and the server's
 * next output, requests started in separate callbacks (HTTP requests a
 * bridge forwards) share a write too. A server that stops reading fills the
 * pipe, then the batch, and then senders wait instead of memory growing.
 * Incoming bytes are framed where they arrive (LineFramer), each line is
 * parsed once and a response completes its caller right there, in the same
 * stdout read.
 *
 * The process belongs to the scope: closing it fails what is in flight, ends
 * stdin, gives the server a grace period to exit, then signals its process
 * group and, on Linux, the descendants that left the group (StdioProcess).
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as PlatformError from "effect/PlatformError"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import type { ChildProcessSpawner } from "effect/process"
import type * as JsonRpc from "../JsonRpc.ts"
import { MessageTooLarge, type SpawnError, type TransportClosed } from "../McpError.ts"
import * as BatchWriter from "../internal/BatchWriter.ts"
import * as ClientCore from "./internal/ClientCore.ts"
import * as Correlation from "../internal/Correlation.ts"
import * as LineFramer from "../internal/LineFramer.ts"
import * as StdioProcess from "./internal/StdioProcess.ts"
import { DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_REQUEST_TIMEOUT_MS } from "../Defaults.ts"
import {
  ClientTransport,
  type ClientTransportShape,
  ConnectionState,
  Diagnostic
} from "./ClientTransport.ts"

/**
 * How the server process is stopped when the transport's scope closes.
 *
 * @since 0.1.0
 * @category models
 */
export interface StdioShutdownOptions {
  /** How long the server may take to exit on its own after stdin is closed. Default 2 seconds. */
  readonly gracePeriod?: Duration.Input | undefined
  /** How long after SIGTERM before SIGKILL goes to the process group. Default 2 seconds. */
  readonly killAfter?: Duration.Input | undefined
  /**
   * After the process exits (or stdout ends), how long to wait for the other
   * side to finish, so that a response written just before exit still
   * arrives and the stderr tail is complete. Only a grandchild holding the
   * pipes open makes this wait its full length. Default 250 ms.
   */
  readonly exitDrain?: Duration.Input | undefined
  /**
   * How often the server's process tree is read while it runs (Linux, from
   * /proc) to record its descendants, so that those that leave its process
   * group are ended with the scope too. It is also read as the scope closes.
   * Default 1 second, at least 50 ms; `Duration.infinity` reads it only as the scope closes;
   * `false` ends the process group alone.
   */
  readonly descendantSampleInterval?: Duration.Input | false | undefined
}

/**
 * Where the server's stderr goes: read and kept here (`"pipe"`), this
 * process's own stderr (`"inherit"`), or nowhere (`"ignore"`).
 *
 * @since 0.1.0
 * @category models
 */
export type StdioStderrMode = StdioProcess.StderrMode

/**
 * What is kept and logged of the server's stderr.
 *
 * @since 0.1.0
 * @category models
 */
export interface StdioStderrOptions {
  /**
   * Where the server's stderr goes. `"pipe"` (the default): read here, line
   * by line, kept for error messages (`stderrTail`), published on `stderr`
   * and logged at debug level. `"inherit"`: straight to this process's own
   * stderr, as a terminal shows it, and `"ignore"`: nowhere; with either,
   * nothing is read or kept here (`stderr` ends at once, `stderrTail` and the
   * `stderrTail` of `TransportClosed` are empty, the options below unused).
   */
  readonly mode?: StdioStderrMode | undefined
  /** Lines kept for error messages and replayed to late `stderr` subscribers. Default 20. */
  readonly tailLines?: number | undefined
  /** Longer stderr lines are replaced by a placeholder. Default 64 KiB. */
  readonly maxLineBytes?: number | undefined
  /** Log each line through Effect's Logger at debug level. Default true. */
  readonly log?: boolean | undefined
}

/**
 * The server to spawn (command, arguments, environment, working directory) and the
 * transport's limits, timeouts and shutdown settings.
 *
 * @since 0.1.0
 * @category models
 */
export interface StdioClientConfig {
  readonly command: string
  readonly args?: ReadonlyArray<string> | undefined
  /**
   * Variables to set for the server. By default they are laid over the
   * parent's environment; a variable set to `undefined` is removed.
   */
  readonly env?: Record<string, string | undefined> | undefined
  /** Inherit the parent's environment under `env`. Default true; false passes `env` alone (no PATH unless given). */
  readonly inheritEnv?: boolean | undefined
  readonly cwd?: string | undefined
  /** Default request timeout. Default 30 seconds; `Duration.infinity` disables it. */
  readonly timeout?: Duration.Input | undefined
  /** Largest message either way, in bytes, newline excluded. Default 10 MiB. */
  readonly maxMessageBytes?: number | undefined
  readonly shutdown?: StdioShutdownOptions | undefined
  readonly stderr?: StdioStderrOptions | undefined
  /**
   * Messages that may wait for the next stdin write while the pipe is full,
   * before senders wait too. Default 256.
   */
  readonly writeQueueCapacity?: number | undefined
  /** Per-subscriber notification buffer (oldest dropped when full). Default 1024. */
  readonly notificationBuffer?: number | undefined
}

/**
 * The `ClientTransport` service plus what only a spawned server has: its pid, the
 * tail of its stderr and its recorded descendants.
 *
 * @since 0.1.0
 * @category models
 */
export interface StdioClientTransportShape extends ClientTransportShape<never> {
  /** The server's process id (the leader of its process group on POSIX). */
  readonly pid: number
  /** The last stderr lines, oldest first. */
  readonly stderrTail: Effect.Effect<ReadonlyArray<string>>
  /**
   * The server's descendants recorded so far that still run: what the scope
   * will end besides the process group. Empty where /proc does not exist.
   */
  readonly descendants: Effect.Effect<ReadonlyArray<number>>
}

/**
 * How long the server may take to exit after stdin is closed, unless `shutdown.gracePeriod` says otherwise: 2 seconds.
 *
 * @since 0.1.0
 * @category defaults
 */
export const DEFAULT_GRACE_PERIOD_MS = 2_000
/**
 * How long after SIGTERM the process group gets SIGKILL, unless `shutdown.killAfter` says otherwise: 2 seconds.
 *
 * @since 0.1.0
 * @category defaults
 */
export const DEFAULT_KILL_AFTER_MS = 2_000
/**
 * How long to wait for the last output after the server exits, unless `shutdown.exitDrain` says otherwise: 250 ms.
 *
 * @since 0.1.0
 * @category defaults
 */
export const DEFAULT_EXIT_DRAIN_MS = 250
/**
 * How often a running server's process tree is read for descendants (Linux) unless
 * `shutdown.descendantSampleInterval` says otherwise: 1 second.
 *
 * @since 0.1.0
 * @category defaults
 */
export const DEFAULT_DESCENDANT_SAMPLE_INTERVAL_MS = 1_000
/**
 * stderr lines kept for `stderrTail` and error messages, unless `stderr.tailLines` says otherwise: 20.
 *
 * @since 0.1.0
 * @category defaults
 */
export const DEFAULT_STDERR_TAIL_LINES = 20
/**
 * The longest stderr line kept as it is, unless `stderr.maxLineBytes` says otherwise: 64 KiB.
 *
 * @since 0.1.0
 * @category defaults
 */
export const DEFAULT_STDERR_MAX_LINE_BYTES = 64 * 1024
/**
 * Messages that may wait for the next stdin write, unless `writeQueueCapacity` says otherwise: 256.
 *
 * @since 0.1.0
 * @category defaults
 */
export const DEFAULT_WRITE_QUEUE_CAPACITY = 256

const noLongerQueued: Correlation.Queued = { withdraw: () => {} }

const MIN_DESCENDANT_SAMPLE_INTERVAL_MS = 50

const toMillis = (input: Duration.Input | undefined, fallback: number): number =>
  input === undefined ? fallback : Duration.toMillis(Duration.fromInputUnsafe(input))

/** The process and shutdown settings with their defaults applied. */
const resolveProcessOptions = (config: StdioClientConfig): StdioProcess.Options => {
  const sampleInterval = config.shutdown?.descendantSampleInterval
  return {
    command: config.command,
    args: config.args ?? [],
    env: config.env,
    inheritEnv: config.inheritEnv ?? true,
    cwd: config.cwd,
    graceMs: toMillis(config.shutdown?.gracePeriod, DEFAULT_GRACE_PERIOD_MS),
    killAfterMs: toMillis(config.shutdown?.killAfter, DEFAULT_KILL_AFTER_MS),
    exitDrainMs: toMillis(config.shutdown?.exitDrain, DEFAULT_EXIT_DRAIN_MS),
    // A walk costs ~0.1 ms of CPU: reading the tree more often than every 50 ms would cost more than it finds.
    descendantSampleIntervalMs: sampleInterval === false
      ? undefined
      : Math.max(MIN_DESCENDANT_SAMPLE_INTERVAL_MS, toMillis(sampleInterval, DEFAULT_DESCENDANT_SAMPLE_INTERVAL_MS)),
    stderrMode: config.stderr?.mode ?? "pipe",
    stderrTailLines: config.stderr?.tailLines ?? DEFAULT_STDERR_TAIL_LINES,
    stderrMaxLineBytes: config.stderr?.maxLineBytes ?? DEFAULT_STDERR_MAX_LINE_BYTES,
    logStderr: config.stderr?.log ?? true
  }
}

/** UTF-8 length without encoding when the answer is obvious from the UTF-16 length. */
const exceedsBytes = (text: string, limit: number): number | undefined => {
  // Every UTF-16 unit is at least one byte and at most three.
  if (text.length * 3 <= limit) return undefined
  if (text.length > limit) return text.length
  const bytes = Buffer.byteLength(text, "utf8")
  return bytes > limit ? bytes : undefined
}

/**
 * Spawns the server and returns the transport; the process belongs to the
 * current `Scope` and is stopped (stdin closed, grace period, SIGTERM, SIGKILL)
 * when the scope closes.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import * as NodeSpawner from "effect-mcp-transport/client/NodeSpawner"
 * import * as StdioClientTransport from "effect-mcp-transport/client/StdioClientTransport"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const transport = yield* StdioClientTransport.make({ command: "node", args: ["server.js"] })
 *   const result = yield* transport.request("ping", {})
 *   console.log(transport.pid, result)
 * })).pipe(Effect.provide(NodeSpawner.layer))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function*(
  config: StdioClientConfig
): Effect.fn.Return<StdioClientTransportShape, SpawnError, Scope.Scope | ChildProcessSpawner.ChildProcessSpawner> {
  const maxBytes = config.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES
  const processOptions = resolveProcessOptions(config)

  const writer = BatchWriter.make<TransportClosed>(config.writeQueueCapacity ?? DEFAULT_WRITE_QUEUE_CAPACITY, {
    coalesceTurn: true
  })

  const encode = (message: JsonRpc.JsonRpcMessage): string | MessageTooLarge => {
    const json = JSON.stringify(message)
    const size = exceedsBytes(json, maxBytes)
    return size === undefined
      ? json + "\n"
      : new MessageTooLarge({ limit: maxBytes, size, direction: "outgoing" })
  }

  /** Waits for room when the server is not keeping up. */
  const send = (message: JsonRpc.JsonRpcMessage): Effect.Effect<void, TransportClosed | MessageTooLarge> =>
    Effect.suspend((): Effect.Effect<void, TransportClosed | MessageTooLarge> => {
      const line = encode(message)
      return typeof line === "string" ? writer.write(line) : Effect.fail(line)
    })

  /** The request fast path: straight into this tick's batch, unless senders are waiting for room. */
  const tryWrite = (message: JsonRpc.JsonRpcRequest): MessageTooLarge | Correlation.WouldBlock | undefined => {
    const line = encode(message)
    if (typeof line !== "string") return line
    if (writer.tryWrite(line)) return undefined
    blockedMessage = message
    blockedLine = line
    return Correlation.WouldBlock
  }
  // The line `tryWrite` could not take, which `callBuffered` hands straight to `enqueue`: encoded once.
  let blockedMessage: JsonRpc.JsonRpcRequest | undefined
  let blockedLine = ""

  /** The request slow path: waits in the writer's queue as a record, without a fiber (see BatchWriter). */
  const enqueue = (
    message: JsonRpc.JsonRpcRequest,
    done: (error: TransportClosed | MessageTooLarge | undefined) => void
  ): Correlation.Queued => {
    const line = blockedMessage === message ? blockedLine : encode(message)
    blockedMessage = undefined
    blockedLine = ""
    if (typeof line !== "string") {
      done(line)
      return noLongerQueued
    }
    return writer.enqueue(line, done)
  }

  const core = yield* ClientCore.make({
    send: (message) => {
      // A cancellation must never hold up the caller's abort: when the server
      // is not reading and the batch is full, it is dropped (best effort).
      if ("method" in message && message.method === "notifications/cancelled" && !("id" in message)) {
        return Effect.sync(() => {
          const line = encode(message)
          if (typeof line === "string") writer.writeOrDrop(line)
        })
      }
      return send(message)
    },
    defaultTimeout: config.timeout ?? Duration.millis(DEFAULT_REQUEST_TIMEOUT_MS),
    notificationBuffer: config.notificationBuffer
  })

  // Senders waiting for room must not outlive the connection: a dead or
  // stuck server would otherwise hold them until their own timeout.
  // Pending calls first: they fail with the reason for closing, not with the
  // server's exit that ending its stdin may cause at once.
  const closeWith = (error: TransportClosed) =>
    Effect.andThen(core.close(error), Effect.sync(() => writer.close(error)))

  // --- stdout: frame, parse once, route ------------------------------------
  const framer = LineFramer.make(maxBytes)
  let toRun: Array<Effect.Effect<void>> = []
  const onFrame = (frame: LineFramer.Frame) => {
    if (frame._tag === "TooLarge") {
      core.diagnose(Diagnostic.MessageTooLarge({ size: frame.size, limit: maxBytes }))
      return
    }
    // Responses and notifications are routed synchronously; only server
    // requests (and cancellations of them) leave work to run.
    const effect = core.dispatchFrame(frame.text)
    if (effect !== Effect.void) toRun.push(effect)
  }
  const runQueued = (): Effect.Effect<void> => {
    if (toRun.length === 0) return Effect.void
    const effects = toRun
    toRun = []
    return Effect.forEach(effects, (e) => e, { discard: true })
  }
  const readStdout = (stdout: Stream.Stream<Uint8Array, PlatformError.PlatformError>) =>
    stdout.pipe(
      Stream.runForEachArray((chunks) => {
        writer.newTurn()
        core.correlation.routingRead(() => {
          for (const chunk of chunks) framer.push(chunk, onFrame)
        })
        return runQueued()
      }),
      Effect.andThen(Effect.suspend(() => {
        framer.end(onFrame)
        return runQueued()
      }))
    )

  const server = yield* StdioProcess.spawn(processOptions, {
    read: readStdout,
    // stdin: one write per tick, or per 16 lines in a burst.
    write: writer.run,
    close: closeWith
  })

  // Unless the server already died during start-up.
  yield* SubscriptionRef.update(core.state, (s) => s._tag === "Connecting" ? ConnectionState.Ready() : s)

  const service = core.service<never>({
    kind: "stdio",
    request: (method, params, options) =>
      core.correlation.callBuffered(method, params, tryWrite, enqueue, core.callOptions(options)),
    notify: (method, params) =>
      Effect.suspend(() => {
        const closed = core.correlation.closedWith()
        if (closed !== undefined) return Effect.fail(closed)
        return send(params === undefined ? { jsonrpc: "2.0", method } : { jsonrpc: "2.0", method, params })
      }),
    stderr: server.stderr
  })

  return {
    ...service,
    pid: server.pid,
    stderrTail: server.stderrTail,
    descendants: server.descendants
  }
})

/**
 * Provides `ClientTransport` backed by a spawned server; the process lives as long as the layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  config: StdioClientConfig
): Layer.Layer<ClientTransport, SpawnError, ChildProcessSpawner.ChildProcessSpawner> =>
  Layer.effect(ClientTransport, make(config))
