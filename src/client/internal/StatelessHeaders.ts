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
 * Header sets kept once built: one per method, or per method and target
 * name. A client uses a handful of methods and a bounded set of tools,
 * prompts and resources; the bound only stops a caller inventing names from
 * growing the map (past it, headers are built per request).
 */
const CACHE_LIMIT = 256

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
  // Without extras, the headers depend on the method and the target name only: built once, then shared.
  // Two levels rather than one joined key: a joined string is hashed anew on every lookup.
  const byMethod = new Map<string, Readonly<Record<string, string>>>()
  const byName = new Map<string, Map<string, Readonly<Record<string, string>>>>()
  let size = 0

  const build = (method: string, params: unknown, extra: Readonly<Record<string, string>> | undefined) => {
    const standard = RequestMeta.standardHeaders(version, method, params)
    standard["accept"] = ACCEPT
    if (extra === undefined) return standard
    const out: Record<string, string> = {}
    for (const key of Object.keys(extra)) out[key.toLowerCase()] = extra[key]!
    return Object.assign(out, standard)
  }

  const forMessage: StatelessHeaders["forMessage"] = (message, extra) => {
    // Only requests and notifications are POSTed in this mode; a response would carry no method.
    const method = "method" in message ? message.method : ""
    const params = "params" in message ? message.params : undefined
    if (extra !== undefined) return build(method, params, extra)
    const name = RequestMeta.nameOf(method, params)
    let names: Map<string, Readonly<Record<string, string>>> | undefined
    let cached: Readonly<Record<string, string>> | undefined
    if (name === undefined) {
      cached = byMethod.get(method)
    } else {
      names = byName.get(method)
      cached = names?.get(name)
    }
    if (cached !== undefined) return cached
    const built = build(method, params, undefined)
    if (size < CACHE_LIMIT) {
      size++
      if (name === undefined) byMethod.set(method, built)
      else if (names !== undefined) names.set(name, built)
      else byName.set(method, new Map([[name, built]]))
    }
    return built
  }

  return { version, forMessage }
}
