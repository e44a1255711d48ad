/**
 * Ladder step: the least an Effect client over `effect`'s own child-process
 * plumbing does, with no MCP in it. The server is spawned through
 * `@effect/platform-node`'s `ChildProcessSpawner` (as our stdio transport
 * is); its stdout `Stream` is split into lines and parsed, and each answer
 * resumes its caller's `Effect.callback` through a map of ids; requests go
 * to stdin through a `Queue` run into the handle's `Sink`. No timeouts, no
 * limits, no cancellation, no validation. Closing ends the queue (so the
 * `Sink` ends stdin), waits for the server's exit (up to 2 s) and then
 * closes the scope (which ends a server still running):
 * the polite stdio shutdown with nothing else in it, which makes this the
 * floor of a close too. The gap to `raw` is what `effect`
 * and its Node adapters cost a stdio client; the gap from here to `ours` is
 * ours.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Queue from "effect/Queue"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import { driveEffect, holdEffect } from "./effect-drive.ts"
import { INITIALIZE_PARAMS, MODERN_META, TOOL_PARAMS } from "./raw-core.ts"
import { loadNodeSpawner } from "../our-modules.ts"
import type { BenchClient, ClientOptions } from "./types.ts"

const NodeSpawner = await loadNodeSpawner()

interface Requester {
  readonly request: (method: string, params?: unknown) => Effect.Effect<unknown>
  readonly notify: (method: string) => Effect.Effect<void>
  /** Lines that were no response: the server's notifications (`notifications/progress` in the sweep). */
  readonly notificationsReceived: () => number
  /** Ends stdin and waits up to 2 s for the server's exit (the scope's close then ends it). */
  readonly finish: Effect.Effect<void>
}

const requester = (command: string, args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
    const handle = yield* spawner.spawn(ChildProcess.make(command, args, { stdin: "pipe", stdout: "pipe", stderr: "inherit" }))
    const pending = new Map<number, (exit: Exit.Exit<unknown>) => void>()
    const outgoing = yield* Queue.unbounded<string, Cause.Done>()
    const encoder = new TextEncoder()
    const decoder = new TextDecoder()
    let partial = ""
    let notifications = 0
    yield* Stream.fromQueue(outgoing).pipe(
      Stream.mapArray((lines) => [encoder.encode(lines.join(""))]),
      Stream.run(handle.stdin),
      Effect.forkScoped
    )
    yield* handle.stdout.pipe(
      Stream.runForEachArray((chunks) => {
        for (const chunk of chunks) {
          const text = partial + decoder.decode(chunk, { stream: true })
          let start = 0
          let end = text.indexOf("\n")
          while (end !== -1) {
            const message = JSON.parse(text.slice(start, end)) as { id?: number; result?: unknown }
            const resume = message.id === undefined ? undefined : pending.get(message.id)
            if (message.id === undefined) notifications++
            else if (resume !== undefined) {
              pending.delete(message.id!)
              resume(Exit.succeed(message.result))
            }
            start = end + 1
            end = text.indexOf("\n", start)
          }
          partial = text.slice(start)
        }
        return Effect.void
      }),
      Effect.forkScoped
    )
    let nextId = 0
    const result: Requester = {
      request: (method, params) =>
        Effect.callback<unknown>((resume) => {
          const id = ++nextId
          pending.set(id, resume)
          Queue.offerUnsafe(outgoing, JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n")
        }),
      notify: (method) => Effect.sync(() => void Queue.offerUnsafe(outgoing, JSON.stringify({ jsonrpc: "2.0", method }) + "\n")),
      notificationsReceived: () => notifications,
      finish: Effect.andThen(Queue.end(outgoing), Effect.ignore(Effect.timeout(handle.exitCode, "2 seconds")))
    }
    return result
  })

export const make = async (
  command: string,
  args: ReadonlyArray<string>,
  options: ClientOptions = {}
): Promise<BenchClient> => {
  const stateless = options.protocol === "2026-07-28"
  const runtime = ManagedRuntime.make(NodeSpawner.layer)
  const scope = await runtime.runPromise(Scope.make())
  const floor = await runtime.runPromise(Scope.provide(requester(command, args), scope))
  if (!stateless) {
    await runtime.runPromise(Effect.andThen(floor.request("initialize", INITIALIZE_PARAMS), floor.notify("notifications/initialized")))
  }
  const meta = stateless ? MODERN_META : {}
  const callTool = floor.request("tools/call", stateless ? { ...TOOL_PARAMS, _meta: meta } : TOOL_PARAMS)
  let token = 0
  const withProgress = Effect.suspend(() =>
    floor.request("tools/call", { ...TOOL_PARAMS, _meta: { ...meta, progressToken: ++token } })
  )
  const ping = floor.request("ping", stateless ? { _meta: MODERN_META } : undefined)
  return {
    callTool: () => runtime.runPromise(callTool),
    callToolWithProgress: () => runtime.runPromise(withProgress),
    progressReceived: floor.notificationsReceived,
    ping: () => runtime.runPromise(ping),
    drive: (op, total, concurrency) =>
      runtime.runPromise(
        driveEffect(op === "ping" ? ping : op === "callToolWithProgress" ? withProgress : callTool, total, concurrency)
      ),
    holdAsFibers: (count) => runtime.runPromise(holdEffect(callTool, count)),
    close: async () => {
      await runtime.runPromise(Effect.andThen(floor.finish, Scope.close(scope, Exit.void)))
      await runtime.dispose()
    }
  }
}
