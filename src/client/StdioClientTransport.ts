/**
 * The stdio client transport: spawns an MCP server as a child process and
 * speaks newline-delimited JSON-RPC over its stdin and stdout.
 *
 * Routing, correlation and state live in ClientCore; this module owns the
 * process and the bytes. The request path does no fiber work of its own: a
 * request is encoded and appended to this tick's batch (BatchWriter), which
 * reaches the server's stdin as one write (one per 16 lines in a burst), and its caller waits on its
 * correlation entry (`callBuffered`). A server that stops reading fills the
 * pipe, then the batch, and then senders wait instead of memory growing.
 * Incoming bytes are framed where they arrive (LineFramer), each line is
 * parsed once and a response completes its caller right there, in the same
 * stdout read.
 *
 * The process belongs to the scope: closing it fails what is in flight, ends
 * stdin, gives the server a grace period to exit, then SIGTERM and SIGKILL go
 * to the whole process group (the spawner starts children detached in their
 * own group on POSIX), so wrappers such as npx or a shell take their
 * grandchildren with them. On Linux the server's descendants are also
 * recorded from /proc while it runs (DescendantReaper), and those that left
 * the group (`setsid`, daemonizing helpers) get the same signals.
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import type * as Arr from "effect/Array"
import type * as Take from "effect/Take"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import type * as JsonRpc from "../JsonRpc.ts"
import { MessageTooLarge, SpawnError, TransportClosed } from "../McpError.ts"
import * as BatchWriter from "../internal/BatchWriter.ts"
import * as ClientCore from "./internal/ClientCore.ts"
import * as Correlation from "../internal/Correlation.ts"
import * as DescendantReaper from "./internal/DescendantReaper.ts"
import * as LineFramer from "../internal/LineFramer.ts"
import { DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_REQUEST_TIMEOUT_MS } from "../Defaults.ts"
import {
  ClientTransport,
  type ClientTransportShape,
  ConnectionState,
  Diagnostic
} from "./ClientTransport.ts"

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

export interface StdioStderrOptions {
  /** Lines kept for error messages and replayed to late `stderr` subscribers. Default 20. */
  readonly tailLines?: number | undefined
  /** Longer stderr lines are replaced by a placeholder. Default 64 KiB. */
  readonly maxLineBytes?: number | undefined
  /** Log each line through Effect's Logger at debug level. Default true. */
  readonly log?: boolean | undefined
}

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

export interface StdioClientTransportShape extends ClientTransportShape {
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

export const DEFAULT_GRACE_PERIOD_MS = 2_000
export const DEFAULT_KILL_AFTER_MS = 2_000
export const DEFAULT_EXIT_DRAIN_MS = 250
export const DEFAULT_DESCENDANT_SAMPLE_INTERVAL_MS = 1_000
export const DEFAULT_STDERR_TAIL_LINES = 20
export const DEFAULT_STDERR_MAX_LINE_BYTES = 64 * 1024
export const DEFAULT_WRITE_QUEUE_CAPACITY = 256

interface ProcessExit {
  readonly exitCode?: number | undefined
  readonly signal?: string | undefined
}

/** How the peer side ended, in the order the transport noticed. */
type PeerEnd =
  | { readonly _tag: "Exited"; readonly exit: ProcessExit }
  | { readonly _tag: "StdoutEnded" }
  | { readonly _tag: "StdoutFailed"; readonly cause: unknown }
  | { readonly _tag: "StdinFailed"; readonly cause: unknown }

const noLongerQueued: Correlation.Queued = { withdraw: () => {} }

const SIGNAL_IN_MESSAGE = /signal:?\s*'?(SIG[A-Z0-9]+)/

/** The spawner reports a death by signal as a failed `exitCode`; the signal name is only in the message. */
const exitFromError = (error: unknown): ProcessExit => {
  const texts: Array<string> = []
  let current: unknown = error
  for (let depth = 0; depth < 4 && current !== undefined && current !== null; depth++) {
    if (current instanceof Error) texts.push(current.message)
    current = (current as { cause?: unknown }).cause
  }
  const match = texts.map((t) => SIGNAL_IN_MESSAGE.exec(t)).find((m) => m !== null)
  return { signal: match?.[1] }
}

const MIN_DESCENDANT_SAMPLE_INTERVAL_MS = 50

const toMillis = (input: Duration.Input | undefined, fallback: number): number =>
  input === undefined ? fallback : Duration.toMillis(Duration.fromInputUnsafe(input))

/** Keeps the last `capacity` lines without shifting arrays. */
const makeRing = (capacity: number) => {
  const lines: Array<string> = []
  let next = 0
  return {
    push: (line: string) => {
      if (capacity <= 0) return
      if (lines.length < capacity) lines.push(line)
      else lines[next] = line
      next = (next + 1) % capacity
    },
    snapshot: (): ReadonlyArray<string> =>
      lines.length < capacity ? lines.slice() : [...lines.slice(next), ...lines.slice(0, next)]
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

export const make = Effect.fnUntraced(function*(
  config: StdioClientConfig
): Effect.fn.Return<StdioClientTransportShape, SpawnError, Scope.Scope | ChildProcessSpawner.ChildProcessSpawner> {
  const args = config.args ?? []
  const maxBytes = config.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES
  const graceMs = toMillis(config.shutdown?.gracePeriod, DEFAULT_GRACE_PERIOD_MS)
  const killAfterMs = toMillis(config.shutdown?.killAfter, DEFAULT_KILL_AFTER_MS)
  const exitDrainMs = toMillis(config.shutdown?.exitDrain, DEFAULT_EXIT_DRAIN_MS)
  const sampleInterval = config.shutdown?.descendantSampleInterval
  // A walk costs ~0.1 ms of CPU: reading the tree more often than every 50 ms would cost more than it finds.
  const sampleIntervalMs = sampleInterval === false
    ? undefined
    : Math.max(MIN_DESCENDANT_SAMPLE_INTERVAL_MS, toMillis(sampleInterval, DEFAULT_DESCENDANT_SAMPLE_INTERVAL_MS))
  const tailLines = config.stderr?.tailLines ?? DEFAULT_STDERR_TAIL_LINES
  const logStderr = config.stderr?.log ?? true

  const writer = BatchWriter.make<TransportClosed>(config.writeQueueCapacity ?? DEFAULT_WRITE_QUEUE_CAPACITY)

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

  const inheritEnv = config.inheritEnv ?? true
  const command = ChildProcess.make(config.command, args, {
    ...(config.env !== undefined || !inheritEnv ? { env: config.env ?? {}, extendEnv: inheritEnv } : {}),
    ...(config.cwd !== undefined ? { cwd: config.cwd } : {}),
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
    killSignal: "SIGTERM",
    forceKillAfter: Duration.millis(killAfterMs)
  })
  const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
  // Added before the spawn so that it runs after the spawner has ended the process group.
  let reaper: DescendantReaper.DescendantReaper | undefined
  yield* Effect.addFinalizer(() => reaper === undefined ? Effect.void : reaper.finish)
  const handle = yield* spawner.spawn(command).pipe(
    Effect.mapError((cause) => new SpawnError({ command: config.command, args, cause }))
  )
  if (sampleIntervalMs !== undefined) {
    reaper = DescendantReaper.make({
      pid: handle.pid,
      rootRunning: Effect.orElseSucceed(handle.isRunning, () => false),
      killAfterMs
    })
    if (Number.isFinite(sampleIntervalMs)) yield* Effect.forkScoped(reaper.sampleEvery(sampleIntervalMs))
  }

  // --- stderr: ring buffer, stream, debug log ------------------------------
  const tail = makeRing(tailLines)
  const stderrHub = yield* PubSub.sliding<Take.Take<string>>({
    capacity: 256,
    replay: tailLines > 0 ? tailLines : undefined
  })
  const stderrDone = yield* Deferred.make<void>()
  const stderrFramer = LineFramer.make(config.stderr?.maxLineBytes ?? DEFAULT_STDERR_MAX_LINE_BYTES)
  const logAnnotations = { mcpServer: config.command, pid: handle.pid, stream: "stderr" }
  const publishStderr = (lines: Array<string>): Effect.Effect<void> => {
    if (lines.length === 0) return Effect.void
    for (const line of lines) tail.push(line)
    PubSub.publishUnsafe(stderrHub, lines as unknown as Arr.NonEmptyReadonlyArray<string>)
    return logStderr
      ? Effect.forEach(lines, (line) => Effect.logDebug(line), { discard: true }).pipe(
        Effect.annotateLogs(logAnnotations)
      )
      : Effect.void
  }
  const onStderrFrame = (lines: Array<string>) => (frame: LineFramer.Frame) => {
    lines.push(frame._tag === "Line" ? frame.text : `[stderr line of at least ${frame.size} bytes omitted]`)
  }
  yield* handle.stderr.pipe(
    Stream.runForEachArray((chunks) => {
      const lines: Array<string> = []
      const onFrame = onStderrFrame(lines)
      for (const chunk of chunks) stderrFramer.push(chunk, onFrame)
      return publishStderr(lines)
    }),
    Effect.ignore,
    Effect.andThen(Effect.suspend(() => {
      const lines: Array<string> = []
      stderrFramer.end(onStderrFrame(lines))
      return publishStderr(lines)
    })),
    Effect.ensuring(Effect.andThen(PubSub.end(stderrHub, Exit.void), Deferred.succeed(stderrDone, undefined))),
    Effect.forkScoped
  )

  // --- stdout: frame, parse once, route ------------------------------------
  const peerEnd = yield* Deferred.make<PeerEnd>()
  const stdoutDone = yield* Deferred.make<void>()
  const exited = yield* Deferred.make<ProcessExit>()
  let processExit: ProcessExit | undefined
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
  yield* handle.stdout.pipe(
    Stream.runForEachArray((chunks) => {
      for (const chunk of chunks) framer.push(chunk, onFrame)
      return runQueued()
    }),
    Effect.andThen(Effect.suspend(() => {
      framer.end(onFrame)
      return runQueued()
    })),
    Effect.matchEffect({
      onSuccess: () => Deferred.succeed(peerEnd, { _tag: "StdoutEnded" }),
      onFailure: (cause) => Deferred.succeed(peerEnd, { _tag: "StdoutFailed", cause })
    }),
    Effect.ensuring(Deferred.succeed(stdoutDone, undefined)),
    Effect.forkScoped
  )

  // --- stdin: one write per tick, or per 16 lines in a burst ---------------
  yield* writer.run(handle.stdin).pipe(
    Effect.catch((cause) => Deferred.succeed(peerEnd, { _tag: "StdinFailed", cause })),
    Effect.forkScoped
  )

  // --- exit and close -------------------------------------------------------
  yield* handle.exitCode.pipe(
    Effect.match({
      onSuccess: (code): ProcessExit => ({ exitCode: code }),
      onFailure: exitFromError
    }),
    Effect.flatMap((exit) => {
      processExit = exit
      return Effect.andThen(Deferred.succeed(exited, exit), Deferred.succeed(peerEnd, { _tag: "Exited", exit }))
    }),
    Effect.forkScoped
  )

  // Whatever ends first, wait briefly for the rest so the close carries the
  // exit status, the last stderr lines and any response already written.
  yield* Effect.gen(function*() {
    const first = yield* Deferred.await(peerEnd)
    yield* Effect.all([Deferred.await(exited), Deferred.await(stdoutDone), Deferred.await(stderrDone)], {
      concurrency: "unbounded",
      discard: true
    }).pipe(Effect.timeoutOption(Duration.millis(exitDrainMs)))
    const exit = processExit
    const reason = first._tag === "Exited" || exit !== undefined
      ? "process exited"
      : first._tag === "StdoutEnded"
      ? "server closed stdout"
      : first._tag === "StdoutFailed"
      ? "reading stdout failed"
      : "writing stdin failed"
    yield* closeWith(
      new TransportClosed({
        reason,
        exitCode: exit?.exitCode,
        signal: exit?.signal,
        stderrTail: tail.snapshot(),
        cause: first._tag === "StdoutFailed" || first._tag === "StdinFailed" ? first.cause : undefined
      })
    )
  }).pipe(Effect.forkScoped)

  // Runs before the fibers above are interrupted and before the spawner's own
  // release (SIGTERM to the group, SIGKILL after `killAfter`). The tree is
  // read before stdin ends, since a wrapper that exits on EOF orphans what it
  // started, and again just before the group's SIGTERM.
  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      if (reaper !== undefined) yield* reaper.sample
      yield* closeWith(new TransportClosed({ reason: "transport scope closed", stderrTail: tail.snapshot() }))
      yield* Deferred.await(exited).pipe(Effect.timeoutOption(Duration.millis(graceMs)))
      if (reaper !== undefined) yield* reaper.terminate
    })
  )

  // Unless the server already died during start-up.
  yield* SubscriptionRef.update(core.state, (s) => s._tag === "Connecting" ? ConnectionState.Ready() : s)

  const service = core.service({
    kind: "stdio",
    request: (method, params, options) =>
      core.correlation.callBuffered(method, params, tryWrite, enqueue, core.callOptions(options)),
    notify: (method, params) =>
      Effect.suspend(() => {
        const closed = core.correlation.closedWith()
        if (closed !== undefined) return Effect.fail(closed)
        return send(params === undefined ? { jsonrpc: "2.0", method } : { jsonrpc: "2.0", method, params })
      }),
    stderr: Stream.fromPubSubTake(stderrHub)
  })

  return {
    ...service,
    pid: handle.pid,
    stderrTail: Effect.sync(() => tail.snapshot()),
    descendants: reaper === undefined ? Effect.succeed([]) : reaper.alive
  }
})

/** Provides `ClientTransport` backed by a spawned server; the process lives as long as the layer. */
export const layer = (
  config: StdioClientConfig
): Layer.Layer<ClientTransport, SpawnError, ChildProcessSpawner.ChildProcessSpawner> =>
  Layer.effect(ClientTransport, make(config))
