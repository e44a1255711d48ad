/**
 * The practical limit on the server side: a minimal NDJSON responder with no
 * framework. Every client in the stdio benchmark talks to this same process.
 * One stdout write per stdin chunk, however many replies it holds.
 * With `--pid`, the tool result's text is `pid:<its process id>` (the cold
 * start workload waits for that process to be gone at teardown).
 * With BENCH_PROGRESS=n or `--progress n` (default 0), every `tools/call`
 * that carries `params._meta.progressToken` gets n `notifications/progress`
 * for that token (progress 1..n, total n) before its result, in the same
 * write. (The flag reaches clients whose transports pass the server only a
 * few chosen environment variables, as the official SDKs' do.)
 *
 * With `--stateless`, it also speaks the stateless revision (2026-07-28): a
 * request whose `_meta` names a protocol version is answered as that
 * revision answers, with `resultType` and the server's identity in `_meta`;
 * `server/discover` offers that revision and the tools capability. (Without
 * it, a dual-era client's probe finds no such server, as before.)
 */
const INIT_RESULT = {
  protocolVersion: "2025-11-25",
  capabilities: { tools: {} },
  serverInfo: { name: "raw-responder", version: "1.0.0" }
}
const TOOL_RESULT = {
  content: [{ type: "text", text: process.argv.includes("--pid") ? `pid:${process.pid}` : "ok" }]
}
const resultSize = Number(process.env.BENCH_RESULT_BYTES ?? 0)
const bigResult = resultSize > 0 ? { content: [{ type: "text", text: "x".repeat(resultSize) }] } : undefined
const progressFlag = process.argv.indexOf("--progress")
const progressPerCall = Number(progressFlag === -1 ? process.env.BENCH_PROGRESS ?? 0 : process.argv[progressFlag + 1])

const stateless = process.argv.includes("--stateless")
const MODERN_VERSION = "2026-07-28"
const MODERN_META = { "io.modelcontextprotocol/serverInfo": INIT_RESULT.serverInfo }
const modern = <A extends object>(result: A) => ({ ...result, resultType: "complete", _meta: MODERN_META })
const MODERN_RESULTS: Record<string, unknown> = {
  "server/discover": modern({ supportedVersions: [MODERN_VERSION], capabilities: { tools: {} }, ttlMs: 0, cacheScope: "private" }),
  "tools/call": modern(bigResult ?? TOOL_RESULT),
  "tools/list": modern({ tools: [{ name: "echo", inputSchema: { type: "object" } }], ttlMs: 0, cacheScope: "private" })
}

/** The notifications that precede a tools/call result, as NDJSON lines. */
const progressLines = (token: unknown): string => {
  const head = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":${JSON.stringify(token)},"progress":`
  let lines = ""
  for (let i = 1; i <= progressPerCall; i++) lines += `${head}${i},"total":${progressPerCall}}}\n`
  return lines
}

// Workload 4 reads this process's peak RSS from the file named here.
const rssFile = process.env.BENCH_RSS_FILE
if (rssFile !== undefined && rssFile !== "") {
  const { writeFileSync } = await import("node:fs")
  process.on("exit", () => writeFileSync(rssFile, String(process.resourceUsage().maxRSS * 1024)))
}

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
      params?: { _meta?: { progressToken?: string | number; "io.modelcontextprotocol/protocolVersion"?: string } }
    }
    if (msg.id === undefined || msg.method === undefined) continue
    const meta = msg.params?._meta
    if (progressPerCall > 0 && meta?.progressToken !== undefined && msg.method === "tools/call") {
      out += progressLines(meta.progressToken)
    }
    const result = stateless && meta?.["io.modelcontextprotocol/protocolVersion"] !== undefined
      ? MODERN_RESULTS[msg.method] ?? modern({})
      : msg.method === "initialize"
      ? INIT_RESULT
      : msg.method === "tools/call"
      ? bigResult ?? TOOL_RESULT
      : msg.method === "tools/list"
      ? { tools: [{ name: "echo", inputSchema: { type: "object" } }] }
      : {}
    out += JSON.stringify({ jsonrpc: "2.0", id: msg.id, result }) + "\n"
  }
  pending = pending.slice(start)
  if (out.length > 0) process.stdout.write(out)
})
// For bench/profile/teardown-phases.ts: when stdin's end reached this process (monotonic µs).
const eofFile = process.env.BENCH_EOF_FILE
const writeEof = eofFile === undefined || eofFile === "" ? undefined : (await import("node:fs")).writeFileSync
process.stdin.on("end", () => {
  if (writeEof !== undefined) writeEof(eofFile!, String(process.hrtime.bigint() / 1000n))
  process.exit(0)
})
