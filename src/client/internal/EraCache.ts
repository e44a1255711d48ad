/**
 * What clients learnt about servers' eras, per server identity, so that a
 * later connection to the same server skips the probe.
 */
import * as Context from "effect/Context"
import type * as ProtocolVersion from "../../ProtocolVersion.ts"

/**
 * What a client learnt about a server: its era and the revision in use.
 *
 * @since 0.1.0
 * @category models
 */
export interface EraEntry {
  readonly era: ProtocolVersion.Era
  readonly version: string
}

/**
 * Eras learnt per server identity (see `identityOfHttp`, `identityOfStdio`).
 * Synchronous and unbounded: one entry per server a process talks to.
 *
 * @since 0.1.0
 * @category models
 */
export interface EraCache {
  readonly entries: Map<string, EraEntry>
}

/**
 * An empty cache, for a client that must not share what it learns.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (): EraCache => ({ entries: new Map() })

/**
 * The cache clients use unless given another (see `CurrentEraCache`). Process-wide, so a later
 * client to the same server skips the probe, as the spec recommends (the
 * era lasts for the process on stdio, per origin on HTTP).
 *
 * @since 0.1.0
 * @category constants
 */
export const global: EraCache = make()

/**
 * The cache a client uses when its options name none. Default: `global`,
 * shared by the whole process. Provide another (`make()`) to keep what a
 * group of clients learns apart, e.g. in a test, which then starts from
 * nothing without clearing `global`.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import * as Negotiation from "effect-mcp-transport/client/Negotiation"
 *
 * const isolated = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
 *   Effect.provideService(effect, Negotiation.CurrentEraCache, Negotiation.make())
 * ```
 *
 * @since 0.1.0
 * @category references
 */
export class CurrentEraCache extends Context.Reference<EraCache>("effect-mcp-transport/client/Negotiation/CurrentEraCache", {
  defaultValue: () => global
}) {}

/**
 * The era learnt for a server, if any.
 *
 * @since 0.1.0
 * @category getters
 */
export const get = (cache: EraCache, identity: string): EraEntry | undefined => cache.entries.get(identity)

/**
 * Remembers a server's era.
 *
 * @since 0.1.0
 * @category utils
 */
export const set = (cache: EraCache, identity: string, entry: EraEntry): void => {
  cache.entries.set(identity, entry)
}

/**
 * Forgets a server's era: call it when the cached assumption fails, so the
 * next connection probes again.
 *
 * @since 0.1.0
 * @category utils
 */
export const invalidate = (cache: EraCache, identity: string): void => {
  cache.entries.delete(identity)
}

/**
 * The cache identity of an HTTP server: its origin and path. The spec
 * speaks of the origin; the path is kept too because one origin often
 * hosts several MCP endpoints (a gateway), which may be of different eras.
 * Query and fragment are dropped; a string that is not a URL is its own
 * identity.
 *
 * @example
 * ```ts
 * import * as Negotiation from "effect-mcp-transport/client/Negotiation"
 *
 * Negotiation.identityOfHttp("https://Example.com:443/mcp?x=1") // "https://example.com/mcp"
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const identityOfHttp = (url: string | URL): string => {
  try {
    const parsed = typeof url === "string" ? new URL(url) : url
    return parsed.origin + parsed.pathname
  } catch {
    return String(url)
  }
}

/**
 * The cache identity of a stdio server: its command line and working
 * directory, as one unambiguous string.
 *
 * @since 0.1.0
 * @category constructors
 */
export const identityOfStdio = (command: string, args: ReadonlyArray<string> = [], cwd?: string): string =>
  "stdio:" + JSON.stringify([command, args, cwd ?? null])
