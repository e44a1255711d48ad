/**
 * `notifyAll` across the instances of a fleet: with a `Bus` service, a
 * notification is published on it and every instance (this one included)
 * delivers it to its own sessions and listens when it arrives, so each
 * receives it once. Without one, delivery stays the direct local call.
 * Each publication carries an id: a session with copies on several
 * instances gets it from the one that claims it (`SessionRegistry.claimDelivery`).
 * A publication the bus refuses is delivered by this instance alone.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { Bus, NOTIFY_TOPIC } from "../Bus.ts"
import { DefinitionError } from "../DefinitionError.ts"

type Notify = (method: string, params?: unknown) => Effect.Effect<void>
/** The local delivery; `deliveryId` names one notification for the whole fleet. */
type Deliver = (method: string, params?: unknown, deliveryId?: string) => Effect.Effect<void>

const decode = (text: string): { readonly method: string; readonly params?: unknown; readonly id?: unknown } | undefined => {
  try {
    const value: unknown = JSON.parse(text)
    if (typeof value !== "object" || value === null) return undefined
    const method = (value as { method?: unknown }).method
    return typeof method === "string" ? value as { method: string; params?: unknown } : undefined
  } catch {
    return undefined
  }
}

/**
 * The fleet-wide `notifyAll` built on the local one; its subscription lives
 * in the scope. A server of the stateless era on a bus that reaches other
 * processes, with no signing keys of its own choosing, is a defect: each
 * instance would sign with a random key and refuse its peers' states.
 */
export const carry = (local: Deliver, options: { readonly randomKey: boolean }): Effect.Effect<Notify, never, Scope.Scope> =>
  Effect.gen(function*() {
    const found = yield* Effect.serviceOption(Bus)
    if (Option.isNone(found)) return local
    const bus = found.value
    if (bus.fleet === true && options.randomKey) {
      return yield* Effect.die(
        new DefinitionError({
          kind: "option",
          name: "requestStateKeys",
          reason: "is required when the server shares a Bus with other instances: each must accept the requestState the others issue"
        })
      )
    }
    yield* bus.subscribe(NOTIFY_TOPIC, (text) => {
      const message = decode(text)
      if (message === undefined) return Effect.void
      return local(message.method, message.params, typeof message.id === "string" ? message.id : undefined)
    })
    return (method, params) => {
      const id = crypto.randomUUID()
      // The bus down: this instance's sessions still hear of it (the others cannot, and the warning says so).
      // A publication given up on that went out after all comes back with the same id: a session copy's
      // claim on it keeps it from being delivered twice while the registry answers.
      return bus.publish(NOTIFY_TOPIC, JSON.stringify({ method, ...(params === undefined ? {} : { params }), id })).pipe(
        Effect.catch((error) =>
          Effect.andThen(
            Effect.logWarning(`notifyAll ${method}: the bus is unavailable; delivered by this instance only`, error),
            local(method, params, id)
          )
        )
      )
    }
  })
