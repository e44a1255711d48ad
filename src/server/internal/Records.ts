/**
 * The check the server's JSON handling shares: a value that is a JSON
 * object (not null, not an array).
 */
export const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)
