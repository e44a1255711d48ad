/**
 * Tasks shared by a fleet: three instances of one server (child processes,
 * stateless era, HTTP) on a real Redis, each client of ours talking to one
 * instance. A task created on A is polled on B and C and cancelled through
 * C, which interrupts A's handler; the answer to a task's elicitation given
 * on B reaches A's handler; a task whose instance is SIGKILLed is seen
 * `failed` on B within the liveness lease plus 2 s, and B goes on serving;
 * a task's TTL ends it on its instance and removes it everywhere. After
 * each, once the instances have stopped, Redis holds the records of the
 * tasks whose TTL has not passed and nothing else.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, type Scope, Stream } from "effect"
import * as McpClient from "../../../src/client/McpClient.ts"
import * as StreamableHttpClientTransport from "../../../src/client/StreamableHttpClientTransport.ts"
import * as RedisTaskStore from "../../../src/server/RedisTaskStore.ts"
import * as RedisServer from "../../fixtures/RedisServer.ts"

const FIXTURE = fileURLToPath(new URL("../../fixtures/fleet-task-server.ts", import.meta.url))
const PREFIX = "ft:"
const LEASE_MS = 2000

const Env = Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici)

type Event = { readonly event: string; readonly tool: string; readonly key: string }

interface Instance {
  readonly name: string
  readonly url: string
  readonly child: ChildProcess
  /** Completes once the instance reported an event that matches. */
  readonly until: (f: (e: Event) => boolean) => Effect.Effect<void>
  /** SIGKILL, as a crash; completes once the process is gone. */
  readonly crash: Effect.Effect<void>
}

const exited = (child: ChildProcess) =>
  Effect.callback<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    child.once("exit", () => resume(Effect.void))
  })

/** One instance as a child process; stopped (SIGTERM, then SIGKILL) when the scope closes. */
const instance = (name: string, redisUrl: string, args: ReadonlyArray<string> = []): Effect.Effect<Instance, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<Instance>((resume) => {
      const child = spawn(process.execPath, [FIXTURE, "--redis", redisUrl, "--name", name, "--prefix", PREFIX, ...args], {
        stdio: ["ignore", "pipe", "pipe"]
      })
      const events: Array<Event> = []
      const waiters = new Set<() => void>()
      let buffer = ""
      let err = ""
      let started = false
      child.stderr!.on("data", (chunk: Buffer) => void (err += chunk.toString()))
      child.stdout!.on("data", (chunk: Buffer) => {
        buffer += chunk.toString()
        let at: number
        while ((at = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, at)
          buffer = buffer.slice(at + 1)
          if (!line.startsWith("{")) continue
          const parsed = JSON.parse(line)
          if (!started && typeof parsed.url === "string") {
            started = true
            const until = (f: (e: Event) => boolean) =>
              Effect.callback<void>((wake) => {
                const check = () => {
                  if (!events.some(f)) return
                  waiters.delete(check)
                  wake(Effect.void)
                }
                waiters.add(check)
                check()
                return Effect.sync(() => waiters.delete(check))
              })
            const crash = Effect.suspend(() => {
              child.kill("SIGKILL")
              return exited(child)
            })
            resume(Effect.succeed({ name, url: parsed.url, child, until, crash }))
          } else {
            events.push(parsed)
            for (const waiter of Array.from(waiters)) waiter()
          }
        }
      })
      child.once("exit", (code) => {
        if (!started) resume(Effect.die(new Error(`instance ${name} exited (${code}) before listening:\n${err}`)))
      })
    }),
    ({ child }) =>
      Effect.suspend(() => {
        if (child.exitCode !== null || child.signalCode !== null) return Effect.void
        const hard = setTimeout(() => child.kill("SIGKILL"), 10_000)
        child.kill("SIGTERM")
        return Effect.ensuring(exited(child), Effect.sync(() => clearTimeout(hard)))
      })
  )

const fleet = (redisUrl: string, args: ReadonlyArray<string> = []) =>
  Effect.all(["A", "B", "C"].map((name) => instance(name, redisUrl, args)), { concurrency: "unbounded" })

/** Our client on one instance, answering elicitations with the name `Ada`. */
const clientOn = (url: string) =>
  McpClient.connect(StreamableHttpClientTransport.make({ url }), {
    protocol: "2026-07-28",
    requestTimeout: "30 seconds",
    handlers: { elicit: () => Effect.succeed({ action: "accept" as const, content: { name: "Ada" } }) }
  })

const textOf = (result: { readonly content: ReadonlyArray<unknown> }) =>
  result.content.map((c) => (c as { text?: string }).text ?? "").join("")

const taskIdOf = (call: McpClient.ToolCallTask<unknown>) => {
  if (call._tag !== "Task") throw new Error("the server answered at once instead of making a task")
  return call.taskId
}

const taskKey = (taskId: string) => `${PREFIX}task:{${taskId}}`

describe.skipIf(!RedisServer.present)("tasks in a fleet (3 instances, one Redis)", () => {
  it.live("a task created on A is polled on B and C, cancelled through C: A's handler is interrupted", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const taskIds = yield* Effect.scoped(Effect.gen(function*() {
        const [a, b, c] = yield* fleet(redis.url)
        const onA = yield* clientOn(a!.url)
        const onB = yield* clientOn(b!.url)
        const onC = yield* clientOn(c!.url)
        const taskId = taskIdOf(yield* onA.callToolTask("hold", { key: "held" }))
        yield* a!.until((e) => e.event === "started" && e.key === "held")
        expect((yield* onB.task(taskId).get).status).toBe("working")
        expect((yield* onC.task(taskId).get).status).toBe("working")
        yield* onC.task(taskId).cancel
        yield* a!.until((e) => e.event === "interrupted" && e.key === "held")
        expect((yield* onB.task(taskId).get).status).toBe("cancelled")
        expect((yield* onA.task(taskId).get).status).toBe("cancelled")
        // A task run through B completes there, read from C.
        const whoami = taskIdOf(yield* onB.callToolTask("whoami"))
        expect(textOf(yield* onC.task(whoami).result)).toBe("B")
        return [taskId, whoami]
      }))
      expect(yield* RedisServer.keysUnder(redis.url, PREFIX)).toEqual(taskIds.map(taskKey).sort())
    }).pipe(Effect.scoped, Effect.provide(Env)), 90_000)

  it.live("the answer to a task's elicitation given on B reaches the handler on A", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const taskId = yield* Effect.scoped(Effect.gen(function*() {
        const [a, b, c] = yield* fleet(redis.url)
        const onA = yield* clientOn(a!.url)
        const onB = yield* clientOn(b!.url)
        const onC = yield* clientOn(c!.url)
        const taskId = taskIdOf(yield* onA.callToolTask("ask"))
        // B's client sees input_required, answers with tasks/update on B, and follows the task to its end.
        expect(textOf(yield* onB.task(taskId).result)).toBe("Ada answered on A")
        expect((yield* onC.task(taskId).get).status).toBe("completed")
        return taskId
      }))
      expect(yield* RedisServer.keysUnder(redis.url, PREFIX)).toEqual([taskKey(taskId)])
    }).pipe(Effect.scoped, Effect.provide(Env)), 90_000)

  it.live("A is SIGKILLed while its task runs: polls on B see it failed within the lease + 2 s, and B goes on", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const taskIds = yield* Effect.scoped(Effect.gen(function*() {
        const [a, b, c] = yield* fleet(redis.url, ["--lease-ms", String(LEASE_MS)])
        const onA = yield* clientOn(a!.url)
        const onB = yield* clientOn(b!.url)
        const onC = yield* clientOn(c!.url)
        const taskId = taskIdOf(yield* onA.callToolTask("hold", { key: "doomed" }))
        yield* a!.until((e) => e.event === "started" && e.key === "doomed")
        expect((yield* onB.task(taskId).get).status).toBe("working")
        yield* a!.crash
        const killedAt = Date.now()
        // B's client polls at the task's pollIntervalMs until the task is terminal.
        const states = yield* Stream.runCollect(onB.task(taskId).states)
        const waited = Date.now() - killedAt
        const last = states[states.length - 1]!
        expect(last).toMatchObject({
          status: "failed",
          statusMessage: RedisTaskStore.OWNER_GONE_MESSAGE,
          error: { code: -32603, message: RedisTaskStore.OWNER_GONE_MESSAGE }
        })
        expect(waited).toBeLessThan(LEASE_MS + 2000)
        expect((yield* onC.task(taskId).get).status).toBe("failed")
        const after = taskIdOf(yield* onB.callToolTask("whoami"))
        expect(textOf(yield* onC.task(after).result)).toBe("B")
        return [taskId, after]
      }))
      expect(yield* RedisServer.keysUnder(redis.url, PREFIX)).toEqual(taskIds.map(taskKey).sort())
    }).pipe(Effect.scoped, Effect.provide(Env)), 90_000)

  it.live("a task's TTL interrupts its handler on A and removes it for B; no key is left", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      yield* Effect.scoped(Effect.gen(function*() {
        const [a, b] = yield* fleet(redis.url, ["--ttl-ms", "1500"])
        const onA = yield* clientOn(a!.url)
        const onB = yield* clientOn(b!.url)
        const taskId = taskIdOf(yield* onA.callToolTask("hold", { key: "brief" }))
        expect((yield* onB.task(taskId).get).status).toBe("working")
        yield* a!.until((e) => e.event === "interrupted" && e.key === "brief")
        // The handler stopped at the TTL, when Redis expired the record.
        const gone = yield* Effect.flip(onB.task(taskId).get)
        expect(gone.message).toContain("Task not found")
      }))
      expect(yield* RedisServer.keysUnder(redis.url, PREFIX)).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(Env)), 90_000)
})
