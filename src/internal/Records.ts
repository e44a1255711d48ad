/**
 * The one test every side applies to parsed JSON before reading members: a
 * JSON object (not null, not an array).
 */
export const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)
