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

export type ProtocolVersion = typeof SUPPORTED[number]

/**
 * What a client asks for and a server falls back to.
 *
 * @since 0.1.0
 * @category constants
 */
export const LATEST: ProtocolVersion = SUPPORTED[0]

export const isSupported = (version: unknown): version is ProtocolVersion =>
  typeof version === "string" && (SUPPORTED as ReadonlyArray<string>).includes(version)
