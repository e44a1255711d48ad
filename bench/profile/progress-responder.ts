/**
 * A minimal NDJSON responder for profiling progress: before each `tools/call`
 * result it writes PROGRESS_COUNT (default 20) `notifications/progress` for
 * the request's `_meta.progressToken` (none when the request carries none),
 * all in the same stdout write as the result.
 */
const count = Number(process.env.PROGRESS_COUNT ?? 20)
const INIT_RESULT = {
  protocolVersion: "2025-11-25",
  capabilities: { tools: {} },
  serverInfo: { name: "progress-responder", version: "1.0.0" }
}
const TOOL_RESULT = { content: [{ type: "text", text: "ok" }] }

let pending = ""
process.stdin.setEncoding("utf8")
process.stdin.on("data", (chunk: string) => {
  pending += chunk
  let out = ""
  let start = 0
  let nl: number
  while ((nl = pending.indexOf("\n", start)) !== -1) {
    const line = pending.slice(start, nl)
    start = nl + 1
    if (line.length === 0) continue
    const msg = JSON.parse(line) as {
      id?: number | string
      method?: string
      params?: { _meta?: { progressToken?: string | number } }
    }
    if (msg.id === undefined || msg.method === undefined) continue
    if (msg.method === "tools/call") {
      const progressToken = msg.params?._meta?.progressToken
      if (progressToken !== undefined) {
        for (let i = 1; i <= count; i++) {
          out += JSON.stringify({
            jsonrpc: "2.0",
            method: "notifications/progress",
            params: { progressToken, progress: i, total: count }
          }) + "\n"
        }
      }
    }
    const result = msg.method === "initialize" ? INIT_RESULT : msg.method === "tools/call" ? TOOL_RESULT : {}
    out += JSON.stringify({ jsonrpc: "2.0", id: msg.id, result }) + "\n"
  }
  pending = pending.slice(start)
  if (out.length > 0) process.stdout.write(out)
})
process.stdin.on("end", () => process.exit(0))
