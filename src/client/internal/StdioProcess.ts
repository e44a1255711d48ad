/**
 * The stdio server's process, supervised for the stdio client transport:
 * spawned through the ChildProcessSpawner, its stderr kept (the last lines,
 * a stream, a debug log) unless it goes to this process's own or nowhere,
 * its exit noticed, and its end tied to the scope.
 *
 * The bytes belong to the transport, which hands over a `Wire`: a pump that
 * reads stdout, a pump that writes stdin, and `close`, which fails what is in
 * flight. This module runs the pumps; whatever ends first (the process,
 * stdout, a failed read or write) closes the wire with a `TransportClosed`
 * carrying the exit status and the stderr tail, after a short wait for the
 * rest (`exitDrainMs`).
 *
 * Closing the scope closes the wire (its write pump then ends stdin), gives
 * the server a grace period to exit, then SIGTERM and SIGKILL go to the
 * whole process group (the spawner starts children detached in their own
 * group on POSIX), so wrappers such as npx or a shell take their
 * grandchildren with them. On Linux the server's descendants are also
 * recorded from /proc while it runs (DescendantReaper), and those that left
 * the group (`setsid`, daemonizing helpers) get the same signals.
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type * as PlatformError from "effect/PlatformError"
import * as PubSub from "effect/PubSub"
import * as Scope from "effect/Scope"
import type * as Sink from "effect/Sink"
import * as Stream from "effect/Stream"
import type * as Arr from "effect/Array"
import type * as Take from "effect/Take"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import { SpawnError, TransportClosed } from "../../McpError.ts"
import * as LineFramer from "../../internal/LineFramer.ts"
import * as DescendantReaper from "./DescendantReaper.ts"

/** Where the server's stderr goes (the transport's `stderr.mode`). */
export type StderrMode = "pipe" | "inherit" | "ignore"

/** What to run and how to end it; durations in milliseconds, defaults already applied. */
export interface Options {
  readonly command: string
  readonly args: ReadonlyArray<string>
  /** Set for the server: laid over the parent's environment when `inheritEnv`, alone otherwise. */
  readonly env: Record<string, string | undefined> | undefined
  readonly inheritEnv: boolean
  readonly cwd: string | undefined
  /** How long the server may take to exit on its own after stdin is closed. */
  readonly graceMs: number
  /** How long after SIGTERM before SIGKILL. */
  readonly killAfterMs: number
  /** After the first end, how long to wait for the exit status, stdout and stderr to finish. */
  readonly exitDrainMs: number
  /** `undefined` ends the process group alone; `Infinity` reads the tree only as the scope closes. */
  readonly descendantSampleIntervalMs: number | undefined
  /** "pipe": read and kept here; "inherit" and "ignore": not ours to read (the rest of `stderr…` then unused). */
  readonly stderrMode: StderrMode
  readonly stderrTailLines: number
  readonly stderrMaxLineBytes: number
  readonly logStderr: boolean
}

/** The transport's side of the pipes. */
export interface Wire {
  /** Reads the server's stdout to its end. */
  readonly read: (stdout: Stream.Stream<Uint8Array, PlatformError.PlatformError>) => Effect.Effect<void, unknown>
  /** Writes to the server's stdin until the wire closes. */
  readonly write: (stdin: Sink.Sink<void, Uint8Array, never, PlatformError.PlatformError>) => Effect.Effect<void, unknown>
  /** Fails what is in flight and refuses what follows, with the reason the connection ended. */
  readonly close: (error: TransportClosed) => Effect.Effect<void>
}

/** A running server, as the transport shows it. */
export interface StdioProcess {
  /** The server's process id (the leader of its process group on POSIX). */
  readonly pid: number
  /** The server's stderr lines; a late subscriber gets the kept tail first. */
  readonly stderr: Stream.Stream<string>
  /** The last stderr lines, oldest first. */
  readonly stderrTail: Effect.Effect<ReadonlyArray<string>>
  /** The recorded descendants that still run; empty where they are not tracked. */
  readonly descendants: Effect.Effect<ReadonlyArray<number>>
}

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

/**
 * Whether the process group of a server that has exited and been reaped is
 * to be left alone at teardown (POSIX; the spawner starts the server as a
 * group leader): it has no member left, or its number names another process
 * now. A pid is not reused while a group of that number has members, so a
 * process found by the reaped server's pid started since, and the group by
 * that number is someone else's: signalling it would end an unrelated
 * program. EPERM means members exist that cannot be signalled, such as
 * zombies on macOS: not gone.
 */
export const leaveGroupAlone = (pid: number): boolean => {
  if (process.platform === "win32") return false
  if (signallable(pid)) return true
  try {
    process.kill(-pid, 0)
    return false
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH"
  }
}

const signallable = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** The server's stderr as the transport keeps it. */
export interface KeptStderr {
  /** Line by line; a late subscriber gets the kept tail first. */
  readonly lines: Stream.Stream<string>
  /** The last lines, oldest first. */
  readonly tail: () => ReadonlyArray<string>
  /** Completes when stderr has ended and its last line is kept. */
  readonly done: Effect.Effect<void>
}

/** A stderr that goes elsewhere (inherited or ignored): nothing to read, keep or wait for. */
const notKept: KeptStderr = { lines: Stream.empty, tail: () => [], done: Effect.void }

/** Reads a piped stderr to its end, in a fiber of the scope: ring buffer, stream, debug log. */
export const keepStderr = Effect.fnUntraced(function*(
  source: Stream.Stream<Uint8Array, PlatformError.PlatformError>,
  options: Options,
  pid: number
): Effect.fn.Return<KeptStderr, never, Scope.Scope> {
  const tailLines = options.stderrTailLines
  const tail = makeRing(tailLines)
  const hub = yield* PubSub.sliding<Take.Take<string>>({
    capacity: 256,
    replay: tailLines > 0 ? tailLines : undefined
  })
  const ended = yield* Deferred.make<void>()
  const framer = LineFramer.make(options.stderrMaxLineBytes)
  const logAnnotations = { mcpServer: options.command, pid, stream: "stderr" }
  const publish = (lines: Array<string>): Effect.Effect<void> => {
    if (lines.length === 0) return Effect.void
    for (const line of lines) tail.push(line)
    // Not `publishUnsafe`: a reader that fell behind by the hub's capacity would lose the newest lines
    // (a crash's last words) where sliding drops its oldest.
    const published = PubSub.publish(hub, lines as unknown as Arr.NonEmptyReadonlyArray<string>)
    return options.logStderr
      ? Effect.andThen(
        published,
        Effect.forEach(lines, (line) => Effect.logDebug(line), { discard: true }).pipe(
          Effect.annotateLogs(logAnnotations)
        )
      )
      : Effect.asVoid(published)
  }
  const onFrame = (lines: Array<string>) => (frame: LineFramer.Frame) => {
    lines.push(frame._tag === "Line" ? frame.text : `[stderr line of at least ${frame.size} bytes omitted]`)
  }
  yield* source.pipe(
    Stream.runForEachArray((chunks) => {
      const lines: Array<string> = []
      const push = onFrame(lines)
      for (const chunk of chunks) framer.push(chunk, push)
      return publish(lines)
    }),
    // The lines read so far are kept and published either way; a failed read says why the rest is missing.
    Effect.catch((error) =>
      Effect.logWarning("MCP stdio: reading the server's stderr failed", error).pipe(Effect.annotateLogs(logAnnotations))
    ),
    Effect.andThen(Effect.suspend(() => {
      const lines: Array<string> = []
      framer.end(onFrame(lines))
      return publish(lines)
    })),
    Effect.ensuring(Effect.andThen(PubSub.end(hub, Exit.void), Deferred.succeed(ended, undefined))),
    Effect.forkScoped
  )
  return { lines: Stream.fromPubSubTake(hub), tail: tail.snapshot, done: Deferred.await(ended) }
})

/** Spawns the server and runs the wire's pumps for as long as the scope lives. */
export const spawn = Effect.fnUntraced(function*(
  options: Options,
  wire: Wire
): Effect.fn.Return<StdioProcess, SpawnError, Scope.Scope | ChildProcessSpawner.ChildProcessSpawner> {
  const { args, inheritEnv, killAfterMs } = options
  const command = ChildProcess.make(options.command, args, {
    ...(options.env !== undefined || !inheritEnv ? { env: options.env ?? {}, extendEnv: inheritEnv } : {}),
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    stdin: "pipe",
    stdout: "pipe",
    stderr: options.stderrMode,
    killSignal: "SIGTERM",
    forceKillAfter: Duration.millis(killAfterMs)
  })
  const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
  // Added before the spawn so that it runs after the spawner has ended the process group.
  let reaper: DescendantReaper.DescendantReaper | undefined
  yield* Effect.addFinalizer(() => reaper === undefined ? Effect.void : reaper.finish)
  // The spawner's release (SIGTERM to the group, SIGKILL after `killAfter`) lives in a scope this
  // transport closes itself, here, after the finalizer below: it is left out once the server has
  // exited and its group has nothing of the server's left to end. For a server that exited with a
  // non-zero code the spawner signals the group whatever it is told, and by the scope's close the
  // group's number may be another program's (see leaveGroupAlone).
  const processScope = yield* Scope.make()
  let processExit: ProcessExit | undefined
  let spawnedPid: number | undefined
  yield* Effect.addFinalizer(() =>
    processExit !== undefined && spawnedPid !== undefined && leaveGroupAlone(spawnedPid)
      ? Effect.void
      : Scope.close(processScope, Exit.void)
  )
  const handle = yield* spawner.spawn(command).pipe(
    Scope.provide(processScope),
    Effect.mapError((cause) => new SpawnError({ command: options.command, args, cause }))
  )
  spawnedPid = handle.pid
  const sampleIntervalMs = options.descendantSampleIntervalMs
  let sampler: Fiber.Fiber<void> | undefined
  if (sampleIntervalMs !== undefined) {
    reaper = DescendantReaper.make({
      pid: handle.pid,
      rootRunning: Effect.orElseSucceed(handle.isRunning, () => false),
      killAfterMs
    })
    if (Number.isFinite(sampleIntervalMs)) sampler = yield* Effect.forkScoped(reaper.sampleEvery(sampleIntervalMs))
  }

  const stderr = options.stderrMode === "pipe" ? yield* keepStderr(handle.stderr, options, handle.pid) : notKept

  // --- the wire's pumps ------------------------------------------------------
  const peerEnd = yield* Deferred.make<PeerEnd>()
  const stdoutDone = yield* Deferred.make<void>()
  const exited = yield* Deferred.make<ProcessExit>()
  yield* wire.read(handle.stdout).pipe(
    Effect.matchEffect({
      onSuccess: () => Deferred.succeed(peerEnd, { _tag: "StdoutEnded" }),
      onFailure: (cause) => Deferred.succeed(peerEnd, { _tag: "StdoutFailed", cause })
    }),
    Effect.ensuring(Deferred.succeed(stdoutDone, undefined)),
    Effect.forkScoped
  )
  yield* wire.write(handle.stdin).pipe(
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
  const closing = yield* Effect.gen(function*() {
    const first = yield* Deferred.await(peerEnd)
    yield* Effect.all([Deferred.await(exited), Deferred.await(stdoutDone), stderr.done], {
      concurrency: "unbounded",
      discard: true
    }).pipe(Effect.timeoutOption(Duration.millis(options.exitDrainMs)))
    const exit = processExit
    const reason = first._tag === "Exited" || exit !== undefined
      ? "process exited"
      : first._tag === "StdoutEnded"
      ? "server closed stdout"
      : first._tag === "StdoutFailed"
      ? "reading stdout failed"
      : "writing stdin failed"
    yield* wire.close(
      new TransportClosed({
        reason,
        exitCode: exit?.exitCode,
        signal: exit?.signal,
        stderrTail: stderr.tail(),
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
      yield* wire.close(new TransportClosed({ reason: "transport scope closed", stderrTail: stderr.tail() }))
      // Stdin's end reaches the server once this turn of the event loop is
      // over. The fibers with nothing left to do (the wire is closed, the tree
      // is read at the SIGTERM) are stopped after it, while the server shuts
      // down, rather than after its exit.
      yield* Effect.yieldNow
      yield* Fiber.interruptAll(sampler === undefined ? [closing] : [closing, sampler])
      yield* Deferred.await(exited).pipe(Effect.timeoutOption(Duration.millis(options.graceMs)))
      if (reaper !== undefined) yield* reaper.terminate
    })
  )

  return {
    pid: handle.pid,
    stderr: stderr.lines,
    stderrTail: Effect.sync(stderr.tail),
    descendants: reaper === undefined ? Effect.succeed([]) : reaper.alive
  }
})
