/**
 * Tasks shared by a fleet: three instances of one server (child processes,
 * stateless era, HTTP) on a real Redis, each client of ours talking to one
 * instance. A task created on A is polled on B and C and cancelled through
 * C, which interrupts A's handler; the answer to a task's elicitation given
 * on B reaches A's handler; a client whose every request goes to the next
 * instance follows tasks to their results; a task whose instance is SIGKILLed is seen
 * `failed` on B once the liveness lease ran out (within the lease plus 10 s,
 * far short of the task's TTL), and B goes on serving;
 * a task's TTL ends it on its instance and removes it everywhere. After
 * each, once the instances have stopped, Redis holds the records of the
 * tasks whose TTL has not passed and nothing else.
 */
import { fileURLToPath } from "node:url"
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import * as McpClient from "../../../src/client/McpClient.ts"
import * as StreamableHttpClientTransport from "../../../src/client/StreamableHttpClientTransport.ts"
import * as RedisTaskStore from "../../../src/server/RedisTaskStore.ts"
import * as Fleet from "../../fixtures/Fleet.ts"
import * as RedisServer from "../../fixtures/RedisServer.ts"

const FIXTURE = fileURLToPath(new URL("../../fixtures/fleet-task-server.ts", import.meta.url))
const PREFIX = "ft:"
const LEASE_MS = 2000
// The owner's mark lapses at most LEASE_MS after its last renewal and B's next poll sees it (about
// 2 s in all); the rest is room for a loaded machine. The task's TTL (10 minutes) is far beyond.
const FAILED_WITHIN_MS = LEASE_MS + 10_000

const Env = Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici)

const fleet = (redisUrl: string, args: ReadonlyArray<string> = []) =>
  Effect.map(Fleet.start({ redisUrl, fixture: FIXTURE, prefix: PREFIX, args }), (fleet) => {
    const on = (name: string) => fleet.instance(name)
    return { fleet, a: on("A"), b: on("B"), c: on("C") }
  })

/** A line where the fixture reports a handler event. */
const reported = (event: string, key: string) => (line: string) => {
  if (!line.startsWith("{")) return false
  const report = JSON.parse(line)
  return report.event === event && report.key === key
}

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

/**
 * The keys left under the fleet's prefix, less the reapers' claims (`reap:<id>`, which expire by
 * themselves: instances stopping together may claim each other's leases while they go).
 */
const keysLeft = (redisUrl: string) =>
  Effect.map(RedisServer.keysUnder(redisUrl, PREFIX), (keys) => keys.filter((key) => !key.startsWith(`${PREFIX}reap:`)))

describe.skipIf(!RedisServer.present)("tasks in a fleet (3 instances, one Redis)", () => {
  it.live("a task created on A is polled on B and C, cancelled through C: A's handler is interrupted", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const taskIds = yield* Effect.scoped(Effect.gen(function*() {
        const { a, b, c } = yield* fleet(redis.url)
        const onA = yield* clientOn(a.url)
        const onB = yield* clientOn(b.url)
        const onC = yield* clientOn(c.url)
        const taskId = taskIdOf(yield* onA.callToolTask("hold", { key: "held" }))
        yield* a.waitForLog(reported("started", "held"))
        expect((yield* onB.task(taskId).get).status).toBe("working")
        expect((yield* onC.task(taskId).get).status).toBe("working")
        yield* onC.task(taskId).cancel
        yield* a.waitForLog(reported("interrupted", "held"))
        expect((yield* onB.task(taskId).get).status).toBe("cancelled")
        expect((yield* onA.task(taskId).get).status).toBe("cancelled")
        // A task run through B completes there, read from C.
        const whoami = taskIdOf(yield* onB.callToolTask("whoami"))
        expect(textOf(yield* onC.task(whoami).result)).toBe("B")
        return [taskId, whoami]
      }))
      expect(yield* keysLeft(redis.url)).toEqual(taskIds.map(taskKey).sort())
    }).pipe(Effect.scoped, Effect.provide(Env)), 90_000)

  it.live("the answer to a task's elicitation given on B reaches the handler on A", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const taskId = yield* Effect.scoped(Effect.gen(function*() {
        const { a, b, c } = yield* fleet(redis.url)
        const onA = yield* clientOn(a.url)
        const onB = yield* clientOn(b.url)
        const onC = yield* clientOn(c.url)
        const taskId = taskIdOf(yield* onA.callToolTask("ask"))
        // B's client sees input_required, answers with tasks/update on B, and follows the task to its end.
        expect(textOf(yield* onB.task(taskId).result)).toBe("Ada answered on A")
        expect((yield* onC.task(taskId).get).status).toBe("completed")
        return taskId
      }))
      expect(yield* keysLeft(redis.url)).toEqual([taskKey(taskId)])
    }).pipe(Effect.scoped, Effect.provide(Env)), 90_000)

  it.live("A is SIGKILLed while its task runs: polls on B see it failed once its lease ran out, and B goes on", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const taskIds = yield* Effect.scoped(Effect.gen(function*() {
        const { fleet: f, a, b, c } = yield* fleet(redis.url, ["--lease-ms", String(LEASE_MS)])
        const onA = yield* clientOn(a.url)
        const onB = yield* clientOn(b.url)
        const onC = yield* clientOn(c.url)
        const taskId = taskIdOf(yield* onA.callToolTask("hold", { key: "doomed" }))
        yield* a.waitForLog(reported("started", "doomed"))
        expect((yield* onB.task(taskId).get).status).toBe("working")
        yield* f.signal("A", "SIGKILL")
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
        expect(waited).toBeLessThan(FAILED_WITHIN_MS)
        expect((yield* onC.task(taskId).get).status).toBe("failed")
        const after = taskIdOf(yield* onB.callToolTask("whoami"))
        expect(textOf(yield* onC.task(after).result)).toBe("B")
        return [taskId, after]
      }))
      // What the killed instance leaves expires by itself: its inbox and its place in the instances'
      // index; the fence counter is the fleet's, kept while any instance may have died holding a token.
      const leftByKilled = (key: string) =>
        key.startsWith(`${PREFIX}inbox:`) || key === `${PREFIX}instances` || key === `${PREFIX}fence`
      expect((yield* keysLeft(redis.url)).filter((key) => !leftByKilled(key))).toEqual(taskIds.map(taskKey).sort())
    }).pipe(Effect.scoped, Effect.provide(Env)), 90_000)

  it.live("our client on a round-robin fetch follows tasks across the instances: created on one, polled, answered and read on the others", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const answers = yield* Effect.scoped(Effect.gen(function*() {
        const { fleet: f } = yield* fleet(redis.url)
        const client = yield* clientOn(f.url).pipe(Effect.provide(Fleet.httpClient(f.roundRobin)))
        const answers: Array<string> = []
        for (let i = 0; i < 4; i++) answers.push(textOf(yield* client.callTool({ name: "ask" })))
        return answers
      }))
      for (const answer of answers) expect(answer).toMatch(/^Ada answered on [ABC]$/)
      // One record per task (four), nothing else.
      expect(yield* keysLeft(redis.url)).toHaveLength(4)
    }).pipe(Effect.scoped, Effect.provide(Env)), 90_000)

  it.live("a task's TTL interrupts its handler on A and removes it for B; no key is left", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      yield* Effect.scoped(Effect.gen(function*() {
        const { a, b } = yield* fleet(redis.url, ["--ttl-ms", "1500"])
        const onA = yield* clientOn(a.url)
        const onB = yield* clientOn(b.url)
        const taskId = taskIdOf(yield* onA.callToolTask("hold", { key: "brief" }))
        expect((yield* onB.task(taskId).get).status).toBe("working")
        yield* a.waitForLog(reported("interrupted", "brief"))
        // The handler stopped at the TTL, when Redis expired the record.
        const gone = yield* Effect.flip(onB.task(taskId).get)
        expect(gone.message).toContain("Task not found")
      }))
      expect(yield* keysLeft(redis.url)).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(Env)), 90_000)
})
