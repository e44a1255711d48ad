/**
 * A POST's requests under the in-flight registry, without Redis: they run
 * recorded when the registry takes them; refused (the instance lost its
 * lease), each is answered with the stopped error and the work never runs,
 * and an answer that cannot be written either (the fence refuses it) ends
 * nothing but itself; without a registry, a session or a stream, the work
 * runs as it always has.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type * as JsonRpc from "../../../src/JsonRpc.ts"
import * as InFlight from "../../../src/server/InFlight.ts"
import { LeaseLost } from "../../../src/server/InstanceLease.ts"
import * as InFlightWork from "../../../src/server/http/InFlightWork.ts"

const refusing: InFlight.InFlightShape = { run: () => Effect.fail(new LeaseLost({ instanceId: "i" })) }

describe("InFlightWork", () => {
  it.effect("records the requests the registry takes, with the stream their answers go to", () =>
    Effect.gen(function*() {
      const seen: Array<ReadonlyArray<InFlight.Entry>> = []
      const recording: InFlight.InFlightShape = { run: (entries, work) => Effect.andThen(Effect.sync(() => seen.push(entries)), work) }
      let ran = false
      yield* InFlightWork.tracked(recording, "sess", "d~s1", new Set([1, "two"]), Effect.sync(() => void (ran = true)), () => Effect.void)
      expect(ran).toBe(true)
      expect(seen).toEqual([[{ session: "sess", requestId: 1, streamId: "d~s1" }, { session: "sess", requestId: "two", streamId: "d~s1" }]])
    }))

  it.effect("refused by the registry: each request gets the stopped error, and the work never runs", () =>
    Effect.gen(function*() {
      const answers: Array<JsonRpc.JsonRpcResponse> = []
      let ran = false
      yield* InFlightWork.tracked(refusing, "sess", "d~s1", new Set([1, 2]), Effect.sync(() => void (ran = true)), (reply) =>
        Effect.sync(() => answers.push(reply)))
      expect(ran).toBe(false)
      expect(answers).toEqual([InFlight.stoppedResponse(1), InFlight.stoppedResponse(2)])
    }))

  it.effect("an answer the fence refuses too (a defect) ends only itself", () =>
    Effect.gen(function*() {
      const tried: Array<JsonRpc.RequestId> = []
      yield* InFlightWork.tracked(refusing, "sess", "d~s1", new Set([1, 2]), Effect.void, (reply) =>
        Effect.andThen(Effect.sync(() => tried.push(reply.id!)), Effect.die(new LeaseLost({ instanceId: "i" }))))
      expect(tried).toEqual([1, 2])
    }))

  it.effect("without a registry, a session id or a stream, the work runs unrecorded", () =>
    Effect.gen(function*() {
      let runs = 0
      const work = Effect.sync(() => void runs++)
      yield* InFlightWork.tracked(undefined, "sess", "d~s1", new Set([1]), work, () => Effect.void)
      yield* InFlightWork.tracked(refusing, undefined, "d~s1", new Set([1]), work, () => Effect.void)
      yield* InFlightWork.tracked(refusing, "sess", undefined, new Set([1]), work, () => Effect.void)
      yield* InFlightWork.tracked(refusing, "sess", "d~s1", new Set(), work, () => Effect.void)
      expect(runs).toBe(4)
    }))
})
