/**
 * A real browser (headless Chromium) on another origin drives the server with
 * plain fetch: CORS preflights pass for an allowed origin, the page can read
 * `Mcp-Session-Id` and keeps its session across requests; a server that does
 * not allow the page's origin is unreachable from it.
 *
 * Needs Debian's `chromium` package (`apt-get install -y chromium`); skipped
 * when no Chromium binary is found.
 */
import { describe, expect, it } from "@effect/vitest"
import { execFile, execFileSync } from "node:child_process"
import * as http from "node:http"
import { Effect, Option } from "effect"
import { serve } from "./helpers.ts"

const chromium = ["chromium", "chromium-browser", "google-chrome"].find((bin) => {
  try {
    execFileSync("which", [bin], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
})

// The page: initialize, read the session id, use it for a call and a DELETE,
// then try a server that does not allow this origin. Results go into the DOM.
const page = `<!doctype html><html><body><pre id="out">pending</pre><script>
const params = new URLSearchParams(location.search)
const allowed = params.get("allowed")
const denied = params.get("denied")
const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" }
const report = (value) => { document.getElementById("out").textContent = JSON.stringify(value) }
;(async () => {
  const result = {}
  try {
    const init = await fetch(allowed, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "browser", version: "1" } } }) })
    result.initStatus = init.status
    const session = init.headers.get("mcp-session-id")
    result.sessionId = session
    await init.json()
    const h = { ...headers, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" }
    const initialized = await fetch(allowed, { method: "POST", headers: h, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) })
    result.initializedStatus = initialized.status
    const call = await fetch(allowed, { method: "POST", headers: h, body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call",
      params: { name: "echo", arguments: { text: "from the browser" } } }) })
    result.call = await call.json()
    const del = await fetch(allowed, { method: "DELETE", headers: { "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" } })
    result.deleteStatus = del.status
    const after = await fetch(allowed, { method: "POST", headers: h, body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "ping" }) })
    result.afterDeleteStatus = after.status
  } catch (e) {
    result.error = String(e)
  }
  try {
    await fetch(denied, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }) })
    result.denied = "reachable"
  } catch (e) {
    result.denied = "blocked"
  }
  report(result)
})()
</script></body></html>`

const runChromium = (bin: string, url: string): Promise<string> =>
  new Promise((resolve, reject) => {
    execFile(bin, [
      "--headless=new",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-dev-shm-usage",
      "--no-first-run",
      "--user-data-dir=/tmp/mcp-cors-chromium",
      "--virtual-time-budget=15000",
      "--dump-dom",
      url
    ], { timeout: 60_000, maxBuffer: 1024 * 1024 }, (error, stdout) => error ? reject(error) : resolve(stdout))
  })

describe("browser clients (headless Chromium, cross-origin)", () => {
  it.live.skipIf(chromium === undefined)("an allowed origin keeps its session; another origin is refused", () =>
    Effect.gen(function*() {
      // The page's own origin: a second server on another port.
      const pageServer = http.createServer((_, res) => {
        res.writeHead(200, { "content-type": "text/html" })
        res.end(page)
      })
      yield* Effect.acquireRelease(
        Effect.promise(() => new Promise<void>((resolve) => pageServer.listen(0, "127.0.0.1", () => resolve()))),
        () => Effect.promise(() => new Promise<void>((resolve) => pageServer.close(() => resolve())))
      )
      const pagePort = (pageServer.address() as { port: number }).port
      const pageOrigin = `http://127.0.0.1:${pagePort}`
      const allowed = yield* serve({ allowedOrigins: [pageOrigin] })
      const denied = yield* serve()
      const url = `${pageOrigin}/?allowed=${encodeURIComponent(Option.getOrThrow(allowed.transport.url))}` +
        `&denied=${encodeURIComponent(Option.getOrThrow(denied.transport.url))}`
      const dom = yield* Effect.promise(() => runChromium(chromium!, url))
      const text = /<pre id="out">([\s\S]*?)<\/pre>/.exec(dom)?.[1] ?? ""
      const result = JSON.parse(text.replace(/&quot;/g, "\"").replace(/&amp;/g, "&"))
      expect(result.error).toBeUndefined()
      expect(result.initStatus).toBe(200)
      expect(result.sessionId).toMatch(/^[0-9a-f-]{36}$/)
      expect(result.initializedStatus).toBe(202)
      expect(result.call).toEqual({ jsonrpc: "2.0", id: 2, result: { content: [{ type: "text", text: "from the browser" }] } })
      expect(result.deleteStatus).toBe(204)
      expect(result.afterDeleteStatus).toBe(404)
      expect(result.denied).toBe("blocked")
    }), 90_000)
})
