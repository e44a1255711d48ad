/**
 * POSTs JSON-RPC bodies to one MCP endpoint over an undici Pool of
 * `connections`, the way the HTTP server probes drive a server: JSON body,
 * both answer types accepted, the answer read whole.
 */
import { Pool } from "undici"

export interface McpPoster {
  readonly post: (
    body: object,
    headers: Record<string, string>
  ) => Promise<{ readonly status: number; readonly headers: Record<string, unknown>; readonly text: string }>
  readonly close: () => Promise<void>
}

export const mcpPoster = (url: string, connections: number): McpPoster => {
  const target = new URL(url)
  const pool = new Pool(target.origin, { connections, pipelining: 1 })
  return {
    post: async (body, headers) => {
      const res = await pool.request({
        path: target.pathname,
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
        body: JSON.stringify(body)
      })
      return { status: res.statusCode, headers: res.headers, text: await res.body.text() }
    },
    close: () => pool.close()
  }
}

/** Opens a 2025-11-25 session (initialize, then initialized); returns the headers its requests carry. */
export const openSession = async (post: McpPoster["post"], clientName: string): Promise<Record<string, string>> => {
  const init = await post({
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: clientName, version: "1.0.0" } }
  }, {})
  const headers = { "mcp-session-id": String(init.headers["mcp-session-id"]), "mcp-protocol-version": "2025-11-25" }
  await post({ jsonrpc: "2.0", method: "notifications/initialized" }, headers)
  return headers
}
