/**
 * A table keyed by request ids: the ids this side issues (request ids,
 * progress tokens), and those a client numbers its requests with. They are
 * mostly increasing integers, so an id's low bits pick a slot of a fixed
 * ring; an id whose slot is still held by another (an entry that outlived
 * `size` later ones, an id out of order), or any other key (a string id, a
 * fraction, a negative number), goes to an overflow Map. A long-lived Map
 * with an entry set and deleted per request carries what it holds into the
 * old generation: 2–3 µs of client CPU per call over stdio at c16–c32, more
 * than the rest of the request's bookkeeping (BENCHMARKS.md, "Pending
 * requests in slots"); a slot costs a few array reads and writes.
 * The ring is made on the first id that takes a slot: a server session, which
 * has a table for the requests it sends its client, often sends none.
 */

export interface SlotTable<K extends string | number, V> {
  get(key: K): V | undefined
  has(key: K): boolean
  /** Adds `key`, or replaces its value. */
  set(key: K, value: V): void
  delete(key: K): void
  /** How many entries are held. */
  size(): number
  /** One value held (the first `values` would list), without building the list. */
  first(): V | undefined
  /** The values held, slots first (in slot order), then the overflow's. */
  values(): Array<V>
  keys(): Array<K>
  clear(): void
}

const FREE = -1

const slotted = (key: string | number): key is number => typeof key === "number" && key >= 0 && Number.isSafeInteger(key)

/**
 * One class for every table, its methods on the prototype: a table that
 * never holds an id costs one small object (no ring, no Map) where a `Map`
 * alone is 192 bytes, and closures per table were 850.
 */
class Table<K extends string | number, V> implements SlotTable<K, V> {
  private keyRing: Array<number> | undefined = undefined
  private valueRing: Array<V | undefined> | undefined = undefined
  private overflow: Map<K, V> | undefined = undefined
  private held = 0
  private readonly slots: number
  private readonly mask: number

  constructor(slots: number) {
    this.slots = slots
    this.mask = slots - 1
  }

  get(key: K): V | undefined {
    const keys = this.keyRing
    if (keys !== undefined && slotted(key)) {
      const i = key & this.mask
      if (keys[i] === key) return this.valueRing![i]
    }
    const overflow = this.overflow
    return overflow === undefined || overflow.size === 0 ? undefined : overflow.get(key)
  }

  has(key: K): boolean {
    return this.get(key) !== undefined
  }

  set(key: K, value: V): void {
    if (slotted(key)) {
      let keys = this.keyRing
      if (keys === undefined) {
        keys = this.keyRing = new Array<number>(this.slots).fill(FREE)
        this.valueRing = new Array<V | undefined>(this.slots).fill(undefined)
      }
      const i = key & this.mask
      if (keys[i] === key) {
        this.valueRing![i] = value
        return
      }
      const overflow = this.overflow
      if (keys[i] === FREE && (overflow === undefined || overflow.size === 0 || !overflow.has(key))) {
        keys[i] = key
        this.valueRing![i] = value
        this.held++
        return
      }
    }
    ;(this.overflow ??= new Map()).set(key, value)
  }

  delete(key: K): void {
    const keys = this.keyRing
    if (keys !== undefined && slotted(key)) {
      const i = key & this.mask
      if (keys[i] === key) {
        keys[i] = FREE
        this.valueRing![i] = undefined
        this.held--
        return
      }
    }
    const overflow = this.overflow
    if (overflow !== undefined && overflow.size > 0) overflow.delete(key)
  }

  size(): number {
    return this.held + (this.overflow?.size ?? 0)
  }

  first(): V | undefined {
    const keys = this.keyRing
    if (keys !== undefined && this.held > 0) {
      for (let i = 0; i < this.slots; i++) if (keys[i] !== FREE) return this.valueRing![i]
    }
    return this.overflow === undefined || this.overflow.size === 0 ? undefined : this.overflow.values().next().value
  }

  values(): Array<V> {
    const out: Array<V> = []
    const keys = this.keyRing
    if (keys !== undefined && this.held > 0) {
      for (let i = 0; i < this.slots; i++) if (keys[i] !== FREE) out.push(this.valueRing![i]!)
    }
    if (this.overflow !== undefined) for (const value of this.overflow.values()) out.push(value)
    return out
  }

  keys(): Array<K> {
    const out: Array<K> = []
    const keys = this.keyRing
    if (keys !== undefined && this.held > 0) {
      for (let i = 0; i < this.slots; i++) if (keys[i] !== FREE) out.push(keys[i] as K)
    }
    if (this.overflow !== undefined) for (const key of this.overflow.keys()) out.push(key)
    return out
  }

  clear(): void {
    this.keyRing?.fill(FREE)
    this.valueRing?.fill(undefined)
    this.held = 0
    this.overflow?.clear()
  }
}

/** A table with a ring of `size` slots (a power of two), made on the first id that takes a slot. */
export const make = <K extends string | number, V>(size = 256): SlotTable<K, V> => {
  if (!Number.isInteger(Math.log2(size))) throw new RangeError(`SlotTable size must be a power of two, got ${size}`)
  return new Table<K, V>(size)
}
