/**
 * Hand-checked decoding of `notifications/progress` params, the one server
 * notification that comes many times per call: a Schema pass over it cost
 * several times the rest of its way to the call. Returns exactly what the
 * Schema path of `ServerNotification.decode` gives, or `undefined` for
 * anything it does not recognise at a glance; the caller then runs the
 * Schema, so malformed progress gets the Schema's own answer (`Other` with
 * its reason). test/client/FastNotification.test.ts holds the two to each other.
 */
import type { Progress } from "./ServerNotificationEnum.ts"

const ObjectProto = Object.prototype
const hasOwn = (o: object, key: string): boolean => ObjectProto.hasOwnProperty.call(o, key)
// For a key that is usually absent, `"key" in o` first (a constant key at each place): it
// answers from V8's inline cache at a fraction of `hasOwnProperty`'s cost, and a key an
// object lacks altogether is not its own.

const isPlainObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && Object.getPrototypeOf(u) === ObjectProto

const isFinite = (u: unknown): u is number => typeof u === "number" && Number.isFinite(u)

/**
 * `{ progressToken: string | finite, progress: finite, total?: finite, message?: string, _meta?: object }`,
 * other members ignored (as the Schema does).
 */
export const progress = (params: unknown): Progress | undefined => {
  if (!isPlainObject(params)) return undefined
  const progressToken = params.progressToken
  const progress = params.progress
  if ((typeof progressToken !== "string" && !isFinite(progressToken)) || !isFinite(progress)) return undefined
  let total: number | undefined
  if (hasOwn(params, "total")) {
    const t = params.total
    if (!isFinite(t)) return undefined
    total = t
  }
  let message: string | undefined
  if ("message" in params && hasOwn(params, "message")) {
    const m = params.message
    if (typeof m !== "string") return undefined
    message = m
  }
  if ("_meta" in params && hasOwn(params, "_meta") && !isPlainObject(params._meta)) return undefined
  // Own members only: an inherited `progressToken` (no JSON value has one) is the Schema's to judge.
  if (!hasOwn(params, "progressToken") || !hasOwn(params, "progress")) return undefined
  // What `ServerNotification.Progress({ … })` builds (its fields, then `_tag`), without the
  // constructor: `Data.taggedEnum` makes a new one per use through a Proxy, more than the
  // rest of this check costs.
  return { progressToken, progress, total, message, _tag: "Progress" }
}
