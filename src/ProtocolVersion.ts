/**
 * The MCP protocol revisions this runtime speaks, shared by the client's
 * handshake and the server's negotiation so the two can never disagree.
 */

/**
 * Newest first.
 *
 * @since 0.1.0
 * @category constants
 */
export const SUPPORTED = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"] as const

/**
 * A protocol revision this runtime speaks, e.g. `"2025-11-25"`.
 *
 * @since 0.1.0
 * @category models
 */
export type ProtocolVersion = typeof SUPPORTED[number]

/**
 * What a client asks for and a server falls back to.
 *
 * @since 0.1.0
 * @category constants
 */
export const LATEST: ProtocolVersion = SUPPORTED[0]

/**
 * Whether a value names a revision in `SUPPORTED`.
 *
 * @example
 * ```ts
 * import * as ProtocolVersion from "effect-mcp-transport/ProtocolVersion"
 *
 * ProtocolVersion.isSupported("2025-06-18") // true
 * ProtocolVersion.isSupported("2099-01-01") // false
 * ```
 *
 * @since 0.1.0
 * @category guards
 */
export const isSupported = (version: unknown): version is ProtocolVersion =>
  typeof version === "string" && (SUPPORTED as ReadonlyArray<string>).includes(version)

/**
 * The stateless revisions this runtime speaks (no handshake, per-request
 * metadata), newest first.
 *
 * @since 0.1.0
 * @category constants
 */
export const STATELESS = ["2026-07-28"] as const

/**
 * A stateless revision, e.g. `"2026-07-28"`.
 *
 * @since 0.1.0
 * @category models
 */
export type StatelessVersion = typeof STATELESS[number]

/**
 * The newest stateless revision: what a client tries first.
 *
 * @since 0.1.0
 * @category constants
 */
export const LATEST_STATELESS: StatelessVersion = STATELESS[0]

/**
 * Every revision this runtime speaks, stateless ones first.
 *
 * @since 0.1.0
 * @category constants
 */
export const ALL = [...STATELESS, ...SUPPORTED] as const

/**
 * Any revision this runtime speaks, in either era.
 *
 * @since 0.1.0
 * @category models
 */
export type AnyVersion = ProtocolVersion | StatelessVersion

/**
 * Which generation of the protocol a connection speaks: `"legacy"` is
 * 2024-11-05 … 2025-11-25 (an `initialize` handshake, sessions on HTTP),
 * `"modern"` is 2026-07-28 onward (stateless: every request carries its own
 * version and capabilities).
 *
 * @since 0.1.0
 * @category models
 */
export type Era = "legacy" | "modern"

/**
 * Whether a value names a stateless revision in `STATELESS`.
 *
 * @example
 * ```ts
 * import * as ProtocolVersion from "effect-mcp-transport/ProtocolVersion"
 *
 * ProtocolVersion.isStateless("2026-07-28") // true
 * ProtocolVersion.isStateless("2025-11-25") // false
 * ```
 *
 * @since 0.1.0
 * @category guards
 */
export const isStateless = (version: unknown): version is StatelessVersion =>
  typeof version === "string" && (STATELESS as ReadonlyArray<string>).includes(version)

/**
 * Whether a value names a revision this runtime speaks in either era.
 *
 * @since 0.1.0
 * @category guards
 */
export const isKnown = (version: unknown): version is AnyVersion => isSupported(version) || isStateless(version)

/**
 * The era a revision belongs to: revisions from 2026-07-28 on are `"modern"`.
 * Dates compare as strings, so a later revision this runtime does not know
 * yet still counts as modern.
 *
 * @since 0.1.0
 * @category utils
 */
export const eraOf = (version: string): Era => (version >= LATEST_STATELESS ? "modern" : "legacy")
