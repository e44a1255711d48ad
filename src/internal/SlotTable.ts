/**
 * A table keyed by the ids this side issues: request ids, progress tokens.
 * They are increasing integers, so an id's low bits pick a slot of a fixed
 * ring; an id whose slot is still held by an older one (an entry that outlived
 * `size` later ones), or any other key (a string id, a number a peer made up),
 * goes to an overflow Map. With a Map for every entry, setting and deleting
 * one entry per request cost 2–3 µs of client CPU per call over stdio at
 * c16–c32, more than the rest of the request's bookkeeping (BENCHMARKS.md,
 * "Pending requests in slots"); a slot costs a few array reads and writes.
 * The ring is made on the first id that takes a slot: a server session, which
 * has a table for the requests it sends its client, often sends none.
 */

export interface SlotTable<K extends string | number, V> {
  readonly get: (key: K) => V | undefined
  readonly has: (key: K) => boolean
  /** Adds `key`, or replaces its value. */
  readonly set: (key: K, value: V) => void
  readonly delete: (key: K) => void
  /** How many entries are held. */
  readonly size: () => number
  /** The values held, slots first (in slot order), then the overflow's. */
  readonly values: () => Array<V>
  readonly keys: () => Array<K>
  readonly clear: () => void
}

const FREE = -1

const slotted = (key: string | number): key is number => typeof key === "number" && key >= 0 && Number.isSafeInteger(key)

/** A table with a ring of `size` slots (a power of two). */
export const make = <K extends string | number, V>(size = 256): SlotTable<K, V> => {
  if (!Number.isInteger(Math.log2(size))) throw new RangeError(`SlotTable size must be a power of two, got ${size}`)
  const mask = size - 1
  let keys: Array<number> | undefined
  let values: Array<V | undefined> | undefined
  const overflow = new Map<K, V>()
  let held = 0

  const get = (key: K): V | undefined => {
    if (keys !== undefined && slotted(key)) {
      const i = key & mask
      if (keys[i] === key) return values![i]
    }
    return overflow.size === 0 ? undefined : overflow.get(key)
  }

  return {
    get,
    has: (key) => get(key) !== undefined,
    set: (key, value) => {
      if (slotted(key)) {
        if (keys === undefined) {
          keys = new Array<number>(size).fill(FREE)
          values = new Array<V | undefined>(size).fill(undefined)
        }
        const i = key & mask
        if (keys[i] === key) {
          values![i] = value
          return
        }
        if (keys[i] === FREE && (overflow.size === 0 || !overflow.has(key))) {
          keys[i] = key
          values![i] = value
          held++
          return
        }
      }
      overflow.set(key, value)
    },
    delete: (key) => {
      if (keys !== undefined && slotted(key)) {
        const i = key & mask
        if (keys[i] === key) {
          keys[i] = FREE
          values![i] = undefined
          held--
          return
        }
      }
      if (overflow.size > 0) overflow.delete(key)
    },
    size: () => held + overflow.size,
    values: () => {
      const out: Array<V> = []
      if (held > 0) for (let i = 0; i < size; i++) if (keys![i] !== FREE) out.push(values![i]!)
      for (const value of overflow.values()) out.push(value)
      return out
    },
    keys: () => {
      const out: Array<K> = []
      if (held > 0) for (let i = 0; i < size; i++) if (keys![i] !== FREE) out.push(keys![i] as K)
      for (const key of overflow.keys()) out.push(key)
      return out
    },
    clear: () => {
      keys?.fill(FREE)
      values?.fill(undefined)
      held = 0
      overflow.clear()
    }
  }
}
