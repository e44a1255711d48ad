/**
 * The instance lease, the fence and the in-flight registry against a real
 * redis-server, in one process: a lease is taken with a token from the
 * fence, renewed past its time and released without a key left; a lease
 * whose key is deleted, expires or holds another token is lost (and said
 * so), its work interrupted, and a new one is taken with a new token once
 * that work has ended (and the instance then answers that work's requests
 * itself), while a fiber the work forked still writes with the old token
 * and is refused; appends and registry writes under a token the lease
 * key no longer holds are refused and write nothing; work that records
 * later writes nothing until it asks, once however often it asks, and
 * nothing is left once it ends; the reaper answers a
 * dead instance's requests on their streams and leaves the rest alone, and
 * an instance stopped in the middle of that finishes it first.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Logger, Option, Scope } from "effect"
import * as Redis from "effect/persistence/Redis"
import { EventStore } from "../../../src/server/EventStore.ts"
import * as InFlight from "../../../src/server/InFlight.ts"
import * as InstanceLeaseModule from "../../../src/server/InstanceLease.ts"
import { InstanceLease, LeaseLost } from "../../../src/server/InstanceLease.ts"
import * as RedisEventStore from "../../../src/server/RedisEventStore.ts"
import * as RedisFleet from "../../../src/server/RedisFleet.ts"
import * as RedisInFlight from "../../../src/server/RedisInFlight.ts"
import * as RedisInstanceLease from "../../../src/server/RedisInstanceLease.ts"
import * as AwaitableLog from "../../fixtures/awaitable-log.ts"
import * as LogWait from "../../fixtures/LogWait.ts"
import * as RedisServer from "../../fixtures/RedisServer.ts"

const PREFIX = "l:"

/** A connection of its own (as another process would have), closed with the scope. */
const connection = (url: string) => Layer.build(RedisFleet.layerConnection({ url }))

/** One instance's lease, log and in-flight registry on its own connection. */
const instanceOn = (url: string, leaseMs: number) =>
  Effect.gen(function*() {
    const context = yield* connection(url)
    const leased = yield* Layer.build(
      Layer.mergeAll(RedisInFlight.layer({ prefix: PREFIX, leaseMs }), Layer.empty).pipe(
        Layer.provideMerge(RedisEventStore.layer({ prefix: PREFIX })),
        Layer.provideMerge(RedisInstanceLease.layer({ prefix: PREFIX, leaseMs }))
      )
    ).pipe(Effect.provideContext(context))
    return {
      lease: Context.get(leased, InstanceLease),
      store: Context.get(leased, EventStore),
      inFlight: Context.get(leased, InFlight.InFlight)
    }
  })

/** Commands from the side, as an operator (or a test) would send them. */
const adminOn = (url: string) => Effect.map(connection(url), (context) => Context.get(context, Redis.Redis))

const capturing = (log: AwaitableLog.AwaitableLog) =>
  Logger.layer([Logger.make((o) => log.add(JSON.stringify(o.message)))])

const lostLine = (entry: string) => entry.includes("lost its lease")
const newLeaseLine = (entry: string) => entry.includes("holds a new lease (token")

describe.skipIf(!RedisServer.present)("InstanceLease on Redis", () => {
  it.live("takes a lease with a token from the fence, renews it past its time, and leaves no key once released", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const admin = yield* adminOn(redis.url)
      const leaseMs = 600
      const lease = yield* Effect.scoped(Effect.gen(function*() {
        const { lease } = yield* instanceOn(redis.url, leaseMs)
        expect(lease.id).toMatch(/^[A-Za-z0-9_-]{12}$/)
        expect(lease.held()).toBe(true)
        expect(yield* admin.send("GET", `${PREFIX}instance:${lease.id}`)).toBe(String(lease.token()))
        expect(yield* admin.send("GET", `${PREFIX}fence`)).toBe(String(lease.token()))
        const ttl = Number(yield* admin.send("PTTL", `${PREFIX}instance:${lease.id}`))
        expect(ttl).toBeGreaterThan(0)
        expect(ttl).toBeLessThanOrEqual(leaseMs)
        expect(yield* admin.send("ZRANGE", `${PREFIX}instances`, "0", "-1")).toEqual([lease.id])
        // Three lease times pass: only renewals keep the key.
        yield* Effect.sleep(leaseMs * 3)
        expect(lease.held()).toBe(true)
        expect(yield* admin.send("GET", `${PREFIX}instance:${lease.id}`)).toBe(String(lease.token()))
        return lease
      }))
      expect(lease.held()).toBe(false)
      expect(yield* RedisServer.keysUnder(redis.url, PREFIX)).toEqual([])
    }).pipe(Effect.scoped), 60_000)

  it.live("a lease whose key is deleted, holds another token or expires is lost, says so, and is taken again with a new token", () => {
    const log = AwaitableLog.make()
    return Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const admin = yield* adminOn(redis.url)
      const { lease } = yield* instanceOn(redis.url, 1500)
      const key = `${PREFIX}instance:${lease.id}`
      const tokens = [lease.token()!]
      const losses: Array<Effect.Effect<unknown, Redis.RedisError>> = [
        admin.send("DEL", key),
        admin.send("SET", key, "999999", "PX", "60000"),
        admin.send("PEXPIRE", key, "1")
      ]
      for (const [i, lose] of losses.entries()) {
        const lost = yield* Effect.forkChild(lease.awaitLost)
        yield* lose
        yield* Fiber.join(lost).pipe(Effect.timeout("10 seconds"))
        expect(lease.held()).toBe(false)
        expect(lease.token()).toBeUndefined()
        expect(log.all().filter(lostLine).length).toBe(i + 1)
        // Taken again (the foreign token only until its key is overwritten by the next acquisition).
        yield* log.waitFor((e) => newLeaseLine(e) && log.all().filter(newLeaseLine).length === i + 1).pipe(
          Effect.timeout("10 seconds")
        )
        expect(lease.held(), `lease held again after loss ${i}`).toBe(true)
        tokens.push(lease.token()!)
        expect(yield* admin.send("GET", key)).toBe(String(lease.token()))
      }
      for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1])
    }).pipe(Effect.scoped, Effect.provide(capturing(log)))
  }, 60_000)

  it.live("fencing: an append or an in-flight record under a token the lease key no longer holds is refused and writes nothing", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const admin = yield* adminOn(redis.url)
      // Long enough that no renewal notices the change during the test.
      const { inFlight, lease, store } = yield* instanceOn(redis.url, 60_000)
      const first = yield* store.append("s~fenced", "before")
      yield* admin.send("SET", `${PREFIX}instance:${lease.id}`, String(lease.token()! + 1000), "PX", "60000")
      const append = yield* Effect.exit(store.append("s~fenced", "late"))
      expect(Exit.isFailure(append) && Exit.hasDies(append)).toBe(true)
      const defect = Exit.isFailure(append) ? append.cause.reasons.find((r) => r._tag === "Die") : undefined
      expect((defect as { defect?: unknown } | undefined)?.defect).toBeInstanceOf(LeaseLost)
      expect(Option.getOrThrow(yield* store.replayAfter(first)).events).toEqual([])
      expect(Number(yield* admin.send("XLEN", `${PREFIX}log:{s}:s~fenced`))).toBe(1)

      const ran = yield* Effect.exit(
        inFlight.run([{ session: "s", requestId: 1, streamId: "s~fenced" }], Effect.succeed("ran"))
      )
      expect(Exit.isFailure(ran) && Exit.hasFails(ran)).toBe(true)
      expect(Exit.isFailure(ran) ? ran.cause.reasons.find((r) => r._tag === "Fail") : undefined).toMatchObject({
        error: { _tag: "LeaseLost", instanceId: lease.id }
      })
      expect(yield* RedisServer.keysUnder(redis.url, `${PREFIX}run`)).toEqual([])
    }).pipe(Effect.scoped), 60_000)

  it.live("work recording later: nothing written until it records, once however often it asks, removed at its end, even when cut short while recording, nothing once it ended; refused under a token the lease key no longer holds", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const admin = yield* adminOn(redis.url)
      const { inFlight, lease } = yield* instanceOn(redis.url, 60_000)
      const runLater = inFlight.runRecordingLater!
      const entries = [{ session: "later", requestId: 7, streamId: "x~later" }]
      const running = () => admin.send("HGETALL", `${PREFIX}running:${lease.id}`)

      // Never asked to record: nothing is written.
      expect(yield* runLater(entries, () => Effect.andThen(running(), (r) => Effect.succeed(r)))).toEqual({})
      expect(yield* RedisServer.keysUnder(redis.url, `${PREFIX}run`)).toEqual([])

      // Asked three times, at once and after: recorded once, and gone when the work ends.
      const seen = yield* runLater(entries, (record) =>
        Effect.gen(function*() {
          yield* Effect.all([record, record], { concurrency: "unbounded" })
          yield* record
          return [yield* running(), yield* admin.send("HGETALL", `${PREFIX}run:{later}`)]
        }))
      expect(seen).toEqual([{ [`["later",7]`]: `[${lease.token()},"x~later"]` }, { "7": `${lease.id} x~later` }])
      expect(yield* RedisServer.keysUnder(redis.url, `${PREFIX}run`)).toEqual([])

      // Interrupted while the record is on its way: it still ends with the record removed.
      const cut = yield* runLater(entries, (record) =>
        Effect.gen(function*() {
          const recording = yield* Effect.forkChild(record)
          // The command is written; its answer has not come back.
          yield* Effect.yieldNow
          yield* Fiber.interrupt(recording)
        })).pipe(Effect.exit)
      expect(Exit.isSuccess(cut)).toBe(true)
      expect(yield* RedisServer.keysUnder(redis.url, `${PREFIX}run`)).toEqual([])

      // Asked once the work is over (by a fiber it left behind): nothing to record.
      const leftBehind = yield* runLater(entries, (record) => Effect.succeed(record))
      yield* leftBehind
      expect(yield* RedisServer.keysUnder(redis.url, `${PREFIX}run`)).toEqual([])

      // Under a token the lease key no longer holds: the record is refused and nothing is written.
      yield* admin.send("SET", `${PREFIX}instance:${lease.id}`, String(lease.token()! + 1000), "PX", "60000")
      const refused = yield* runLater(entries, (record) => Effect.exit(record))
      expect(Exit.isFailure(refused) ? refused.cause.reasons.find((r) => r._tag === "Fail") : undefined).toMatchObject({
        error: { _tag: "LeaseLost", instanceId: lease.id }
      })
      expect(yield* RedisServer.keysUnder(redis.url, `${PREFIX}run`)).toEqual([])
    }).pipe(Effect.scoped), 60_000)

  it.live("work under the lease is recorded while it runs and interrupted when the lease is lost; a new lease waits until it has ended, then its request is answered", () => {
    const log = AwaitableLog.make()
    return Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const admin = yield* adminOn(redis.url)
      const { inFlight, lease, store } = yield* instanceOn(redis.url, 600)
      const priming = yield* store.append("x~stream", "")
      const started = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      yield* Effect.addFinalizer(() => Deferred.succeed(gate, void 0))
      const entry = { session: "sess", requestId: "r-1", streamId: "x~stream" }
      // A fiber the work forks and that outlives it (as a request's handler does): it writes late.
      const lateGate = yield* Deferred.make<void>()
      yield* Effect.addFinalizer(() => Deferred.succeed(lateGate, void 0))
      const lateWrite = yield* Deferred.make<Exit.Exit<string>>()
      const outliving = Effect.forkDetach(
        Effect.andThen(Deferred.await(lateGate), Effect.exit(store.append("x~stream", "late"))).pipe(
          Effect.flatMap((exit) => Deferred.succeed(lateWrite, exit))
        )
      )
      // Work that cannot be interrupted at once: it ends when the gate opens.
      const work = yield* Effect.forkChild(Effect.exit(inFlight.run(
        [entry],
        Effect.andThen(
          Effect.andThen(outliving, Deferred.succeed(started, void 0)),
          Effect.uninterruptible(Deferred.await(gate))
        )
      )))
      yield* Deferred.await(started)
      expect(yield* admin.send("HGETALL", `${PREFIX}run:{sess}`)).toEqual({ [`"r-1"`]: `${lease.id} x~stream` })
      expect(Number(yield* admin.send("HLEN", `${PREFIX}running:${lease.id}`))).toBe(1)

      yield* admin.send("DEL", `${PREFIX}instance:${lease.id}`)
      yield* log.waitFor(lostLine).pipe(Effect.timeout("10 seconds"))
      // Several renewal periods pass: no new lease while the old work runs.
      yield* Effect.sleep(600)
      expect(log.all().some(newLeaseLine)).toBe(false)
      expect(lease.held()).toBe(false)
      yield* Deferred.succeed(gate, void 0)
      const exit = yield* Fiber.join(work)
      expect(Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail") : undefined).toMatchObject({
        error: { _tag: "LeaseLost" }
      })
      yield* log.waitFor(newLeaseLine).pipe(Effect.timeout("10 seconds"))
      expect(lease.held()).toBe(true)
      // Under the new lease, the fiber that outlived the work still writes with the old token: refused.
      yield* Deferred.succeed(lateGate, void 0)
      const late = yield* Deferred.await(lateWrite)
      expect(Exit.isFailure(late) && Exit.hasDies(late)).toBe(true)
      yield* store.append("x~stream", "now")
      expect((yield* LogWait.all(redis.url, `${PREFIX}log:{x}:x~stream`)).map((e) => e.data)).not.toContain("late")
      // Its record could not be removed under the lost lease: the instance answers it itself, under the new one.
      const answered = yield* LogWait.awaitEvent(redis.url, `${PREFIX}log:{x}:x~stream`, priming, 10_000, (e) => e.data.startsWith("{"))
      expect(JSON.parse(answered!.data)).toEqual(InFlight.stoppedResponse("r-1"))
      yield* log.waitFor((e) => e.includes(`of instance ${lease.id}, which stopped`)).pipe(Effect.timeout("10 seconds"))
      expect(yield* admin.send("EXISTS", `${PREFIX}running:${lease.id}`)).toBe(0)
      expect(yield* admin.send("EXISTS", `${PREFIX}run:{sess}`)).toBe(0)
    }).pipe(Effect.scoped, Effect.provide(capturing(log)))
  }, 60_000)

  it.live("the reaper answers a dead instance's requests on their streams, and leaves a live instance's requests of the same session alone", () => {
    const log = AwaitableLog.make()
    return Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const admin = yield* adminOn(redis.url)
      // The instance that dies: its lease is renewed too seldom to notice within the test.
      const dead = yield* instanceOn(redis.url, 60_000)
      const live = yield* instanceOn(redis.url, 600)
      const session = "sess-1"
      const deadStream = "d~post-1"
      const liveStream = "d~post-2"
      const priming = yield* dead.store.append(deadStream, "")
      yield* live.store.append(liveStream, "")
      const running = yield* Deferred.make<void>()
      const runningToo = yield* Deferred.make<void>()
      yield* Effect.forkChild(dead.inFlight.run(
        [{ session, requestId: 7, streamId: deadStream }, { session: "other", requestId: "never-written", streamId: "o~none" }],
        Effect.andThen(Deferred.succeed(running, void 0), Effect.never)
      ))
      yield* Effect.forkChild(live.inFlight.run(
        [{ session, requestId: 8, streamId: liveStream }],
        Effect.andThen(Deferred.succeed(runningToo, void 0), Effect.never)
      ))
      yield* Deferred.await(running)
      yield* Deferred.await(runningToo)
      const liveEntry = { 8: `${live.lease.id} ${liveStream}` }

      // The process is gone: its lease key no longer exists.
      yield* admin.send("DEL", `${PREFIX}instance:${dead.lease.id}`)
      const answered = (yield* LogWait.nextEvents(redis.url, `${PREFIX}log:{d}:${deadStream}`, priming, 10_000))
        .map((e) => JSON.parse(e.data))
      expect(answered).toEqual([InFlight.stoppedResponse(7)])
      expect(answered[0].error).toEqual({
        code: -32603,
        message: InFlight.stoppedMessage,
        data: { reason: "instance-stopped" }
      })
      // The dead instance is forgotten; the live one's request of the same session is untouched.
      yield* log.waitFor((e) => e.includes(`of instance ${dead.lease.id}, which stopped`)).pipe(Effect.timeout("10 seconds"))
      yield* live.store.append(liveStream, "marker")
      expect(yield* admin.send("HGETALL", `${PREFIX}run:{${session}}`)).toEqual(liveEntry)
      expect(yield* admin.send("EXISTS", `${PREFIX}running:${dead.lease.id}`)).toBe(0)
      expect(yield* admin.send("ZRANGE", `${PREFIX}instances`, "0", "-1")).toEqual([live.lease.id])
      expect(yield* admin.send("EXISTS", `${PREFIX}reap:${dead.lease.id}`)).toBe(0)
      // A stream never written to gets nothing (no reader could resume it).
      expect(yield* admin.send("EXISTS", `${PREFIX}log:{o}:o~none`)).toBe(0)
    }).pipe(Effect.scoped, Effect.provide(capturing(log)))
  }, 60_000)

  it.live("an instance stopped while its reaper answers a dead one's requests finishes that pass: no claim is left behind", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const admin = yield* adminOn(redis.url)
      const dead = yield* instanceOn(redis.url, 60_000)
      const deadStream = "d~post-3"
      yield* dead.store.append(deadStream, "")
      const running = yield* Deferred.make<void>()
      yield* Effect.forkChild(dead.inFlight.run(
        [{ session: "sess-2", requestId: 9, streamId: deadStream }],
        Effect.andThen(Deferred.succeed(running, void 0), Effect.never)
      ))
      yield* Deferred.await(running)

      // The reaping instance, in a scope of its own, its appends held until the test lets them go.
      const appending = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const heldStore = Layer.effect(EventStore)(Effect.gen(function*() {
        const store = yield* EventStore
        return {
          ...store,
          append: (streamId: string, data: string, event?: string) =>
            Effect.andThen(
              Effect.andThen(Deferred.succeed(appending, void 0), Deferred.await(release)),
              store.append(streamId, data, event)
            )
        }
      }))
      const reaperScope = yield* Scope.make()
      const context = yield* connection(redis.url)
      yield* Layer.buildWithScope(
        RedisInFlight.layer({ prefix: PREFIX, leaseMs: 400 }).pipe(
          Layer.provide(heldStore),
          Layer.provideMerge(RedisEventStore.layer({ prefix: PREFIX })),
          Layer.provideMerge(RedisInstanceLease.layer({ prefix: PREFIX, leaseMs: 400 }))
        ),
        reaperScope
      ).pipe(Effect.provideContext(context))

      yield* admin.send("DEL", `${PREFIX}instance:${dead.lease.id}`)
      yield* Deferred.await(appending)
      expect(yield* admin.send("EXISTS", `${PREFIX}reap:${dead.lease.id}`)).toBe(1)
      // The instance stops mid-pass; the pass goes on to its end before the stop completes.
      const stopping = yield* Effect.forkChild(Scope.close(reaperScope, Exit.void))
      yield* Deferred.succeed(release, void 0)
      yield* Fiber.join(stopping)
      expect(yield* admin.send("EXISTS", `${PREFIX}reap:${dead.lease.id}`)).toBe(0)
      expect(yield* admin.send("EXISTS", `${PREFIX}running:${dead.lease.id}`)).toBe(0)
    }).pipe(Effect.scoped), 60_000)
})

describe("InstanceLease and InFlight in memory", () => {
  it.effect("an instance alone: a random 12-character id, a lease never lost, work run as is, nothing recorded", () =>
    Effect.gen(function*() {
      const lease = yield* InstanceLease.pipe(Effect.provide(InstanceLeaseModule.layerMemory))
      expect(lease.id).toMatch(/^[A-Za-z0-9_-]{12}$/)
      expect(InstanceLeaseModule.makeMemory().id).not.toBe(lease.id)
      expect(lease.key).toBeUndefined()
      expect(lease.held()).toBe(true)
      expect(yield* lease.run(Effect.succeed("ran"))).toBe("ran")
      const lost = yield* Effect.forkChild(lease.awaitLost)
      yield* Effect.yieldNow
      expect(lost.pollUnsafe()).toBeUndefined()
      const inFlight = yield* InFlight.InFlight.pipe(Effect.provide(InFlight.layerMemory))
      expect(yield* inFlight.run([{ session: "s", requestId: 1, streamId: "s~1" }], Effect.succeed(42))).toBe(42)
    }))
})
