/**
 * The official SDK's server for the HTTP and large-message workloads: its
 * `McpServer` with one tool, on `StreamableHTTPServerTransport` over
 * `node:http` (stateful: one transport and server per session;
 * `enableJsonResponse` for `--mode json`) or on its `StdioServerTransport`.
 *
 *   node bench/http/server-sdk.ts --transport http|stdio [--mode json|sse] [--bytes N]
 */
import { randomUUID } from "node:crypto"
import { createServer, type IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import type { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { announce, flag, modeFlag, reportPeakRssOnExit, toolResult } from "./common.ts"

reportPeakRssOnExit()
const result = toolResult(Number(flag("bytes", "0")))

const makeServer = () => {
  const server = new McpServer({ name: "bench-sdk", version: "1.0.0" })
  server.registerTool("echo", { description: "echo" }, async () => result)
  return server
}

const readBody = (req: IncomingMessage): Promise<unknown> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      try {
        resolve(chunks.length === 0 ? undefined : JSON.parse(Buffer.concat(chunks).toString("utf8")))
      } catch (e) {
        reject(e)
      }
    })
    req.on("error", reject)
  })

// Each transport's modules load only when it is the one served, as in a user's server.
if (flag("transport", "http") === "stdio") {
  const { StdioServerTransport } = await import("@modelcontextprotocol/sdk/server/stdio.js")
  await makeServer().connect(new StdioServerTransport())
} else {
  const { StreamableHTTPServerTransport } = await import("@modelcontextprotocol/sdk/server/streamableHttp.js")
  const enableJsonResponse = modeFlag() === "json"
  const sessions = new Map<string, StreamableHTTPServerTransport>()
  const http = createServer(async (req, res) => {
    try {
      const body = req.method === "POST" ? await readBody(req) : undefined
      const id = req.headers["mcp-session-id"]
      let transport = typeof id === "string" ? sessions.get(id) : undefined
      if (transport === undefined) {
        if (req.method !== "POST" || typeof id === "string") {
          res.writeHead(404).end()
          return
        }
        const fresh = new StreamableHTTPServerTransport({
          sessionIdGenerator: randomUUID,
          enableJsonResponse,
          onsessioninitialized: (sid) => void sessions.set(sid, fresh)
        })
        fresh.onclose = () => {
          if (fresh.sessionId !== undefined) sessions.delete(fresh.sessionId)
        }
        await makeServer().connect(fresh)
        transport = fresh
      }
      await transport.handleRequest(req, res, body)
    } catch {
      if (!res.headersSent) res.writeHead(500).end()
    }
  })
  // As the raw server: a client's idle keep-alive connection is not closed under it after 5 s.
  http.keepAliveTimeout = 60_000
  http.listen(0, "127.0.0.1", () => announce(`http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`))
  const stop = () => {
    for (const t of sessions.values()) void t.close()
    http.closeAllConnections()
    http.close(() => process.exit(0))
  }
  process.on("SIGTERM", stop)
  process.on("SIGINT", stop)
}
