/**
 * The transport's shutdown state. Once draining, every MCP request is
 * answered at once with 503, `Retry-After` and `Connection: close`, so a
 * load balancer sends it (and the client's next connection) to another
 * instance, while the requests already running finish here. The health
 * endpoint reports `draining` with 503 at the same time, so a balancer
 * that probes it stops routing here.
 */
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Security from "./Security.ts"

export interface Drain {
  readonly draining: () => boolean
  /** Starts draining; there is no way back. */
  readonly start: () => void
}

export const make = (): Drain => {
  let draining = false
  return {
    draining: () => draining,
    start: () => {
      draining = true
    }
  }
}

/** The answer to a request that arrives while draining, or `undefined` when it may go on. */
export const refusal = (
  drain: Drain | undefined,
  retryAfterSeconds: number
): HttpServerResponse.HttpServerResponse | undefined =>
  drain === undefined || !drain.draining()
    ? undefined
    : Security.invalid(503, "Service unavailable: this server is shutting down", {
      "retry-after": String(retryAfterSeconds),
      connection: "close"
    })
