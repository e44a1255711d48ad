/**
 * A client's calls in flight by progress token, for routing each progress
 * notification to its call. The tokens are the client's own increasing
 * integers, so a token's low bits pick a slot of a fixed ring; a token whose
 * slot is still held by an older call (one that outlived `size` later calls)
 * goes to an overflow Map instead. With a Map for every call, setting and
 * deleting one entry per call cost about 2 µs of client CPU per call at
 * c16–c32 (BENCHMARKS.md, "What `McpClient`'s call adds"); a slot costs a few
 * array reads and writes.
 */

export interface TokenSlots<A> {
  readonly get: (token: number) => A | undefined
  /** `token` must not be in the table already. */
  readonly set: (token: number, value: A) => void
  readonly delete: (token: number) => void
  /** How many entries are held (slots and overflow). */
  readonly size: () => number
}

const FREE = -1

/** A table of `size` slots (a power of two). Tokens are non-negative safe integers. */
export const make = <A>(size = 256): TokenSlots<A> => {
  if (!Number.isInteger(Math.log2(size))) throw new RangeError(`TokenSlots size must be a power of two, got ${size}`)
  const mask = size - 1
  const keys: Array<number> = new Array<number>(size).fill(FREE)
  const values: Array<A | undefined> = new Array<A | undefined>(size).fill(undefined)
  const overflow = new Map<number, A>()
  let held = 0

  return {
    get: (token) => {
      const i = token & mask
      if (keys[i] === token) return values[i]
      return overflow.size === 0 ? undefined : overflow.get(token)
    },
    set: (token, value) => {
      const i = token & mask
      if (keys[i] === FREE) {
        keys[i] = token
        values[i] = value
        held++
      } else overflow.set(token, value)
    },
    delete: (token) => {
      const i = token & mask
      if (keys[i] === token) {
        keys[i] = FREE
        values[i] = undefined
        held--
      } else if (overflow.size > 0) overflow.delete(token)
    },
    size: () => held + overflow.size
  }
}
