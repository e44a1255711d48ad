/**
 * A POST's requests, recorded in the fleet's in-flight registry while they
 * run (see `InFlight`), so that another instance answers them if this one
 * dies. Refused by the registry (this instance lost its lease, or loses it
 * meanwhile), each request is answered with the same error a reaper would
 * give it; where that answer cannot be written either (the fence refuses
 * this instance's appends), the stream ends without it, and a reaper's
 * answer is what a client resuming the stream gets. The POST's other
 * messages, which the registry does not record (a batch's invalid entries,
 * its refusals, a notification), are then answered by `others`.
 *
 * Given `recordLater`, the requests are recorded only when the transport
 * runs the effect it is handed (`InFlight.runRecordingLater`), where the
 * registry can do that.
 */
import * as Effect from "effect/Effect"
import type * as JsonRpc from "../../JsonRpc.ts"
import { type InFlightShape, stoppedResponse } from "../InFlight.ts"
import type { LeaseLost } from "../InstanceLease.ts"

export const tracked = (
  inFlight: InFlightShape | undefined,
  session: string | undefined,
  streamId: string | undefined,
  ids: ReadonlySet<JsonRpc.RequestId>,
  work: Effect.Effect<void>,
  answer: (reply: JsonRpc.JsonRpcResponse) => Effect.Effect<unknown>,
  others?: () => Effect.Effect<void>,
  recordLater?: (record: Effect.Effect<void, LeaseLost>) => void
): Effect.Effect<void> => {
  if (inFlight === undefined || session === undefined || streamId === undefined || ids.size === 0) return work
  const entries = [...ids].map((requestId) => ({ session, requestId, streamId }))
  const run = recordLater === undefined || inFlight.runRecordingLater === undefined
    ? inFlight.run(entries, work)
    : inFlight.runRecordingLater(entries, (record) => {
      recordLater(record)
      return work
    })
  return run.pipe(
    Effect.catchTag("LeaseLost", () => {
      const refused = Effect.forEach(ids, (id) => answer(stoppedResponse(id)).pipe(Effect.catchDefect(() => Effect.void)), {
        discard: true
      })
      return others === undefined ? refused : Effect.andThen(refused, Effect.suspend(others))
    })
  )
}
