/**
 * The stateless era's cache hints honoured: a discover or list result is
 * reused for the `ttlMs` the server allowed, and a list is dropped as soon
 * as the server says it changed. A result without `ttlMs` (or with 0) is
 * not kept.
 */

export interface ResultCache {
  readonly get: (key: string) => unknown
  readonly set: (key: string, value: unknown, ttlMs: unknown) => void
  /** Drops every entry whose key starts with `prefix` (a method: all its pages). */
  readonly invalidate: (prefix: string) => void
}

const OFF: ResultCache = { get: () => undefined, set: () => {}, invalidate: () => {} }

export const make = (enabled: boolean, now: () => number = Date.now): ResultCache => {
  if (!enabled) return OFF
  const entries = new Map<string, { readonly value: unknown; readonly expires: number }>()
  return {
    get: (key) => {
      const entry = entries.get(key)
      if (entry === undefined) return undefined
      if (entry.expires > now()) return entry.value
      entries.delete(key)
      return undefined
    },
    set: (key, value, ttlMs) => {
      if (typeof ttlMs !== "number" || !(ttlMs > 0)) return
      entries.set(key, { value, expires: now() + ttlMs })
    },
    invalidate: (prefix) => {
      for (const key of entries.keys()) if (key.startsWith(prefix)) entries.delete(key)
    }
  }
}
