/**
 * The `requestState` a server of the stateless era (2026-07-28) hands out
 * with an `input_required` result and reads back from the client's retry.
 * It carries what the server needs to resume a handler: the client's answers
 * of earlier rounds and the keys asked in the last one. The client holds it,
 * so it is attacker-controlled: it is signed (HMAC-SHA256 with a key the
 * server holds), bound to the request it was issued for (method, tool /
 * prompt / resource name, the params' digest, the principal when there is
 * one), expires, and is bounded in size.
 *
 * The token is `v1.<payload>.<mac>`, both parts base64url. The MAC covers
 * the payload's text as sent (not its decoded bytes: base64 decoders
 * tolerate variants, and every byte of the token must matter).
 *
 * Pure: the clock reading is an argument.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto"
import { isRecord } from "../../internal/Records.ts"

/** What a state is bound to: a state issued for one binding is refused for any other. */
export interface Binding {
  readonly method: string
  /** The tool or prompt name, or the resource URI. */
  readonly name: string
  /** A digest of the request's own params (`digestParams`). */
  readonly digest: string
  /** The authenticated principal, when the transport names one. */
  readonly principal: string | undefined
}

/** What travels between rounds. */
export interface State {
  /** The client's answers so far, by ask key, as the client sent them. */
  readonly answers: Readonly<Record<string, unknown>>
  /** The keys asked in the round this state was issued with. */
  readonly asked: ReadonlyArray<string>
}

export interface Config {
  /** The first signs what is issued; any of them checks what comes back (rotation). */
  readonly keys: ReadonlyArray<Uint8Array>
  readonly ttlMs: number
  readonly maxBytes: number
}

export type Verified =
  | { readonly _tag: "Valid"; readonly state: State }
  | { readonly _tag: "Invalid"; readonly reason: string }

const PREFIX = "v1."

const mac = (key: Uint8Array, payload: string): string =>
  createHmac("sha256", key).update(PREFIX).update(payload).digest("base64url")

/** Stable JSON: object keys sorted, so a client that rebuilds its params in another order still matches. */
const canonical = (u: unknown): string => {
  if (Array.isArray(u)) return `[${u.map(canonical).join(",")}]`
  if (typeof u === "object" && u !== null) {
    const entries = Object.keys(u).sort().filter((k) => (u as Record<string, unknown>)[k] !== undefined)
    return `{${entries.map((k) => `${JSON.stringify(k)}:${canonical((u as Record<string, unknown>)[k])}`).join(",")}}`
  }
  return JSON.stringify(u) ?? "null"
}

/** The request's own params (without `_meta`, the answers and the state) as a short digest. */
export const digestParams = (params: Readonly<Record<string, unknown>>): string => {
  const { _meta: _, inputResponses: __, requestState: ___, ...own } = params
  return createHash("sha256").update(canonical(own)).digest("base64url")
}

/**
 * A request's binding, its params hashed on first read of `digest` (most
 * calls carry no state and ask nothing, so never). A class, not an object
 * literal with a getter: see docs/design.md, "Per-request code and the old generation".
 */
export class LazyBinding implements Binding {
  readonly method: string
  readonly name: string
  readonly principal: string | undefined
  readonly #params: Readonly<Record<string, unknown>>
  #digest: string | undefined
  constructor(method: string, name: string, principal: string | undefined, params: Readonly<Record<string, unknown>>) {
    this.method = method
    this.name = name
    this.principal = principal
    this.#params = params
  }
  get digest(): string {
    return this.#digest ??= digestParams(this.#params)
  }
}

/** The signed token, or `undefined` when it would exceed `maxBytes`. */
export const issue = (config: Config, binding: Binding, state: State, nowMs: number): string | undefined => {
  const payload = Buffer.from(
    JSON.stringify({
      m: binding.method,
      n: binding.name,
      d: binding.digest,
      p: binding.principal ?? null,
      e: nowMs + config.ttlMs,
      a: state.answers,
      k: state.asked
    })
  ).toString("base64url")
  const token = `${PREFIX}${payload}.${mac(config.keys[0], payload)}`
  return token.length > config.maxBytes ? undefined : token
}

const invalid = (reason: string): Verified => ({ _tag: "Invalid", reason })

/** Checks size, signature, binding and expiry, in that order, and reads the state. */
export const verify = (config: Config, binding: Binding, token: unknown, nowMs: number): Verified => {
  if (typeof token !== "string") return invalid("requestState must be a string")
  if (token.length > config.maxBytes) return invalid(`requestState is larger than ${config.maxBytes} bytes`)
  const dot = token.indexOf(".", PREFIX.length)
  if (!token.startsWith(PREFIX) || dot < 0) return invalid("requestState was not issued by this server")
  const payload = token.slice(PREFIX.length, dot)
  const given = Buffer.from(token.slice(dot + 1))
  const signedBy = (key: Uint8Array) => {
    const expected = Buffer.from(mac(key, payload))
    return given.length === expected.length && timingSafeEqual(given, expected)
  }
  if (!config.keys.some(signedBy)) {
    return invalid("requestState was not issued by this server or was altered")
  }
  let body: unknown
  try {
    body = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"))
  } catch {
    return invalid("requestState is malformed")
  }
  if (
    !isRecord(body) || typeof body.e !== "number" || !isRecord(body.a) || !Array.isArray(body.k) ||
    !body.k.every((k) => typeof k === "string")
  ) {
    return invalid("requestState is malformed")
  }
  if (body.m !== binding.method || body.n !== binding.name) {
    return invalid(`requestState was issued for another request (${String(body.m)} ${JSON.stringify(body.n)})`)
  }
  if (body.d !== binding.digest) return invalid("requestState was issued for other arguments")
  if (body.p !== (binding.principal ?? null)) return invalid("requestState was issued to another principal")
  if (nowMs > body.e) return invalid("requestState has expired")
  return { _tag: "Valid", state: { answers: body.a, asked: body.k as Array<string> } }
}
