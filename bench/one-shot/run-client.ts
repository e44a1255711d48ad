/**
 * One client measurement of the one-shot workload in a fresh process:
 * `node bench/one-shot/run-client.ts '<json Job>'` prints one JSON line
 * (`Result` of bench/http/run-client.ts).
 *
 * Clients:
 * - `one-shot`: `OneShot.callTool` on `NodeHttpClient.layerUndici` (or
 *   `FetchHttpClient.layer` with `http: "fetch"`), driven from fibers, with
 *   `protocol` "auto" (so a session-era server is found once, then used)
 * - `hand-written fetch`: global `fetch`, `res.json()`, or for an SSE answer
 *   the first `data:` line; against a session-era server the four requests a
 *   call needs (initialize, notifications/initialized, the call, DELETE)
 */
import { loadOneShot } from "../our-modules.ts"
import { drive, measureAndExit } from "../stats.ts"

export interface Job {
  readonly client: "one-shot" | "hand-written fetch"
  readonly era: "modern" | "legacy"
  readonly url: string
  readonly http: "undici" | "fetch"
  readonly concurrency: number
  readonly total: number
  readonly warmup: number
}

const ARGS = { text: "hi" }
const CLIENT_INFO = { name: "bench-one-shot", version: "1.0.0" }

const handWritten = (job: Job): (() => Promise<unknown>) => {
  let nextId = 0
  const read = async (res: Response): Promise<{ result?: unknown }> => {
    if (res.headers.get("content-type")?.startsWith("text/event-stream")) {
      const text = await res.text()
      const at = text.indexOf("data:")
      return JSON.parse(text.slice(at + 5, text.indexOf("\n", at))) as { result?: unknown }
    }
    return (await res.json()) as { result?: unknown }
  }
  const base = { "content-type": "application/json", accept: "application/json, text/event-stream" }
  if (job.era === "modern") {
    const headers = { ...base, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "echo" }
    const meta = {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientCapabilities": {},
      "io.modelcontextprotocol/clientInfo": CLIENT_INFO
    }
    return async () => {
      const res = await fetch(job.url, {
        method: "POST",
        headers,
        body: JSON.stringify({ jsonrpc: "2.0", id: ++nextId, method: "tools/call", params: { name: "echo", arguments: ARGS, _meta: meta } })
      })
      return (await read(res)).result
    }
  }
  return async () => {
    const init = await fetch(job.url, {
      method: "POST",
      headers: base,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: ++nextId,
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: CLIENT_INFO }
      })
    })
    const session = init.headers.get("mcp-session-id")!
    await read(init)
    const headers = { ...base, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" }
    await (await fetch(job.url, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) })).text()
    const res = await fetch(job.url, {
      method: "POST",
      headers,
      body: JSON.stringify({ jsonrpc: "2.0", id: ++nextId, method: "tools/call", params: { name: "echo", arguments: ARGS } })
    })
    const result = (await read(res)).result
    await (await fetch(job.url, { method: "DELETE", headers })).text()
    return result
  }
}

const job = JSON.parse(process.argv[2]!) as Job
let run: (n: number) => Promise<{ rps: number; p50: number; p99: number }>
let close = async () => {}
if (job.client === "one-shot") {
  const ManagedRuntime = await import("effect/ManagedRuntime")
  const { driveEffect } = await import("../clients/effect-drive.ts")
  const OneShot = await loadOneShot()
  const layer = job.http === "fetch"
    ? (await import("effect/http/FetchHttpClient")).layer
    : (await import("@effect/platform-node/NodeHttpClient")).layerUndici
  const Effect = await import("effect/Effect")
  const { HttpClient } = await import("effect/http/HttpClient")
  const runtime = ManagedRuntime.make(layer)
  const client = await runtime.runPromise(HttpClient)
  const call = Effect.provideService(OneShot.callTool(job.url, "echo", ARGS, { clientInfo: CLIENT_INFO }), HttpClient, client)
  run = (n) => runtime.runPromise(driveEffect(call, n, job.concurrency))
  close = () => runtime.dispose()
} else {
  const call = handWritten(job)
  run = (n) => drive(call, n, job.concurrency)
}
await measureAndExit(run, close, job)
