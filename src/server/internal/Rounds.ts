/**
 * The asks of one run of a handler in a multi-round request of the stateless
 * era (`input_required`, SEP-2322).
 *
 * An ask is keyed by the name the handler gave it (`InputKey`) or else by its
 * order among the unnamed asks of the run (`ask-0`, `ask-1`…): the run after a
 * retry makes the same asks in the same order, so each finds the answer
 * recorded for it. An ask with no answer yet is recorded as pending and stops
 * the handler by interruption (a failure it could catch would let it go on
 * without the answer). It yields once before it stops, so that asks made
 * concurrently (`Effect.all` with concurrency) are recorded too and asked in
 * one round. An answer that is not a result of the asked method stops the
 * handler the same way and is reported as the client's mistake (`invalid`).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"

/** The key the asks made inside it are asked under (none: their position). */
export const InputKey = Context.Reference<string | undefined>("effect-mcp-transport/server/InputKey", {
  defaultValue: () => undefined
})

/** An answer that did not decode as a result of the method asked. */
export interface InvalidAnswer {
  readonly key: string
  readonly method: string
  readonly reason: string
}

type Pending = ReadonlyMap<string, { readonly method: string; readonly params: unknown }>

const NONE_PENDING: Pending = new Map()
const NONE_USED: ReadonlySet<string> = new Set()

/** Its collections are made on the first ask: most runs ask nothing. */
export class Rounds {
  #next = 0
  #keys: Set<string> | undefined
  #pending: Map<string, { readonly method: string; readonly params: unknown }> | undefined
  #used: Set<string> | undefined
  invalid: InvalidAnswer | undefined
  readonly answers: Readonly<Record<string, unknown>>
  constructor(answers: Readonly<Record<string, unknown>>) {
    this.answers = answers
  }
  /** The asks of this run that found no answer: they go out in the `input_required` result. */
  get pending(): Pending {
    return this.#pending ?? NONE_PENDING
  }
  /** The keys whose recorded answer this run used. */
  get used(): ReadonlySet<string> {
    return this.#used ?? NONE_USED
  }

  ask<A>(
    method: string,
    params: unknown,
    decode: (raw: unknown) => Effect.Effect<A, { readonly message: string }>
  ): Effect.Effect<A> {
    return Effect.flatMap(InputKey, (named: string | undefined) =>
      Effect.suspend(() => {
        const key = named ?? `ask-${this.#next++}`
        // One key, one ask: a second ask under it would be handed the first one's answer.
        const keys = this.#keys ??= new Set()
        if (keys.has(key)) return Effect.die(new Error(`Two asks of one request share the input key "${key}"`))
        keys.add(key)
        if (!Object.hasOwn(this.answers, key)) {
          const pending = this.#pending ??= new Map()
          pending.set(key, { method, params: params ?? {} })
          return Effect.andThen(Effect.yieldNow, Effect.interrupt)
        }
        const used = this.#used ??= new Set()
        used.add(key)
        return decode(this.answers[key]).pipe(
          Effect.catch((e) => {
            this.invalid ??= { key, method, reason: e.message }
            return Effect.interrupt
          })
        )
      }))
  }
}
