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
