/**
 * Statuses that say nothing about which transport or protocol era a server
 * speaks: authorization (401, 403, 407), a timeout (408) and a rate limit
 * (429). Falling back to another transport or era on one of them would
 * hide the answer the caller needs.
 */
export const isNeutralStatus = (status: number): boolean =>
  status === 401 || status === 403 || status === 407 || status === 408 || status === 429
