/**
 * The transport's own headers on a POST of the stateless Streamable HTTP
 * mode (2026-07-28 on): `Accept`, the routing headers `RequestMeta` defines
 * (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) and the per-request
 * headers the protocol layer computed (`Mcp-Param-*`).
 */
import type * as JsonRpc from "../../JsonRpc.ts"
import * as RequestMeta from "../../RequestMeta.ts"

const ACCEPT = "application/json, text/event-stream"

/**
 * Methods whose headers are kept once built. The protocol layer uses a
 * handful; the bound only stops a caller inventing method names from
 * growing the map.
 */
const CACHE_LIMIT = 64

/** The headers of one stateless revision. */
export interface StatelessHeaders {
  readonly version: string
  /**
   * The headers of a POST carrying `message`, `extra` included (lower-cased;
   * the routing headers win over an extra of the same name). The record may
   * be shared between requests: read it, never change it.
   */
  readonly forMessage: (
    message: JsonRpc.JsonRpcMessage,
    extra: Readonly<Record<string, string>> | undefined
  ) => Readonly<Record<string, string>>
}

export const make = (version: string): StatelessHeaders => {
  // Without a target name or extras, a method's headers never change: built once, then shared.
  const byMethod = new Map<string, Readonly<Record<string, string>>>()

  const build = (method: string, params: unknown, extra: Readonly<Record<string, string>> | undefined) => {
    const out: Record<string, string> = {}
    if (extra !== undefined) for (const key of Object.keys(extra)) out[key.toLowerCase()] = extra[key]!
    Object.assign(out, RequestMeta.standardHeaders(version, method, params))
    out["accept"] = ACCEPT
    return out
  }

  const forMessage: StatelessHeaders["forMessage"] = (message, extra) => {
    // Only requests and notifications are POSTed in this mode; a response would carry no method.
    const method = "method" in message ? message.method : ""
    if (extra === undefined && !Object.hasOwn(RequestMeta.NAMED_METHODS, method)) {
      const known = byMethod.get(method)
      if (known !== undefined) return known
      const built = build(method, undefined, undefined)
      if (byMethod.size < CACHE_LIMIT) byMethod.set(method, built)
      return built
    }
    return build(method, "params" in message ? message.params : undefined, extra)
  }

  return { version, forMessage }
}
