/**
 * The keys that sign and check `requestState` (stateless era): the first
 * signs every state issued, any of them checks a state brought back, so a
 * key can be rotated without refusing the states issued under the one
 * before. Every key is at least 32 bytes (the HMAC-SHA256 block-size rule
 * of thumb: a shorter key is guessable, and an empty one lets anyone sign).
 * A faulty key list is refused when the server is defined, not when the
 * first state is checked.
 */
import { DefinitionError } from "../DefinitionError.ts"

/** The fewest bytes a signing key may have. */
export const MIN_KEY_BYTES = 32

export type Key = string | Uint8Array

export interface KeyOptions {
  readonly requestStateKey?: Key | undefined
  readonly requestStateKeys?: ReadonlyArray<Key> | undefined
}

const bytesOf = (key: Key): Uint8Array => typeof key === "string" ? new TextEncoder().encode(key) : key

const refused = (name: string, reason: string) => new DefinitionError({ kind: "option", name, reason })

/**
 * The keys the options name, current first; `undefined` when they name none
 * (the server then uses the `RequestStateKey` reference's). Throws a
 * `DefinitionError` for a key shorter than `MIN_KEY_BYTES`, an empty list,
 * or both options at once.
 */
export const resolve = (options: KeyOptions): ReadonlyArray<Uint8Array> | undefined => {
  const one = options.requestStateKey
  const many = options.requestStateKeys
  if (one !== undefined && many !== undefined) {
    throw refused("requestStateKey", "and requestStateKeys are both given: name the keys in requestStateKeys alone")
  }
  if (one === undefined && many === undefined) return undefined
  const given: ReadonlyArray<Key> = many ?? [one!]
  const name = many === undefined ? "requestStateKey" : "requestStateKeys"
  if (given.length === 0) throw refused(name, "is empty: it needs the current key first")
  return given.map((key, i) => {
    if (typeof key !== "string" && !(key instanceof Uint8Array)) {
      throw refused(many === undefined ? name : `${name}[${i}]`, "is neither a string nor a Uint8Array")
    }
    const bytes = bytesOf(key)
    if (bytes.length < MIN_KEY_BYTES) {
      throw refused(
        many === undefined ? name : `${name}[${i}]`,
        `is ${bytes.length} bytes: a requestState signing key needs at least ${MIN_KEY_BYTES} (e.g. crypto.randomBytes(32))`
      )
    }
    return bytes
  })
}

/**
 * Keys provided as the `RequestStateKey` reference, checked as the options
 * are: a value provided directly (not through its `make`) is not trusted.
 */
export const provided = (keys: ReadonlyArray<Uint8Array>): ReadonlyArray<Uint8Array> => {
  if (keys.length === 0) throw refused("RequestStateKey", "is empty: it needs the current key first")
  keys.forEach((key, i) => {
    if (!(key instanceof Uint8Array) || key.length < MIN_KEY_BYTES) {
      throw refused(`RequestStateKey[${i}]`, `is not a key of at least ${MIN_KEY_BYTES} bytes (e.g. crypto.randomBytes(32))`)
    }
  })
  return keys
}
