/**
 * Server CPU per `tools/call` over real loopback HTTP, measured from outside
 * (the server process's utime + stime in /proc), for:
 * - `ours stateless`: this project's server (bench/stateless-server/server-ours.ts:
 *   McpServer, both eras) taking 2026-07-28 POSTs with the era's headers and `_meta`;
 * - `ours session`: the same server process, in a 2025-11-25 session opened once;
 * - `bare stateless`, `bare session`: the transport with a bare `Handler`
 *   (bench/stateless-server/server-bare.ts): what the transport costs without `McpServer`;
 * - `node:http`: a bare node:http server doing the same JSON work (parse the
 *   body, answer the JSON-RPC request, JSON reply; bench/stateless-server/server-minimal.ts);
 *   `node:http session` the same server given a session's request (no `_meta`,
 *   a session's headers), the floor a session's request is held to;
 * - `effect/http`: one effect/http route on NodeHttpServer doing the same
 *   (bench/http/server-effect-min.ts): what effect/http and the platform cost
 *   by themselves.
 * - `effect/http checked`: one effect/http route doing the same with the
 *   checks a compliant 2026-07-28 server makes on every POST, as plain code
 *   (bench/http/server-effect-checked.ts): effect/http plus the protocol's
 *   checks, without the transport's structure.
 * One undici Pool per variant drives it at concurrency `c`. After a warm-up,
 * rounds interleave the variants (the order rotates each round), so load on
 * a shared machine hits all alike; the figures are medians over rounds.
 *
 *   npx node bench/profile/http-server-eras.ts [requests=8000] [concurrency=32] [rounds=5] [warmup=20000]
 *
 * `BEFORE_ROOT=/tmp/before` also runs `before stateless` and `before session`:
 * the same server from another checkout's `bench/` and `src/` (e.g.
 * `git archive <commit> bench src | tar -x -C /tmp/before`, with
 * `node_modules` linked beside them), in the same rounds.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { createInterface } from "node:readline"
import { Pool } from "undici"

const [totalText = "8000", concText = "32", roundsText = "5", warmupText = "20000"] = process.argv.slice(2)
const total = Number(totalText), concurrency = Number(concText), rounds = Number(roundsText), warmup = Number(warmupText)
const here = new URL(".", import.meta.url).pathname
const oursRoot = resolve(here, "../..")
const beforeRoot = process.env.BEFORE_ROOT

const start = (script: string, args: ReadonlyArray<string> = []): Promise<{ child: ChildProcess; url: string }> =>
  new Promise((ok, fail) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ["ignore", "pipe", "inherit"] })
    child.once("exit", (code) => fail(new Error(`${script} exited (${code})`)))
    createInterface({ input: child.stdout! }).on("line", (line) => {
      if (line.startsWith("listening ")) ok({ child, url: line.slice("listening ".length).trim() })
    })
  })

const TICK_US = 1_000_000 / 100
/** utime + stime of a process, µs (clock ticks of 10 ms). */
const cpuOf = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")
  return (Number(fields[11]) + Number(fields[12])) * TICK_US
}

interface Variant {
  readonly name: string
  readonly pid: number
  readonly call: () => Promise<void>
}

const STATELESS = "2026-07-28"
const SESSION = "2025-11-25"
const meta = {
  "io.modelcontextprotocol/protocolVersion": STATELESS,
  "io.modelcontextprotocol/clientInfo": { name: "eras-bench", version: "1.0.0" },
  "io.modelcontextprotocol/clientCapabilities": {}
}
const base = { "content-type": "application/json", accept: "application/json, text/event-stream" }

const variant = (name: string, pid: number, url: string, headers: Record<string, string>, withMeta: boolean): Variant => {
  const target = new URL(url)
  const pool = new Pool(target.origin, { connections: concurrency, pipelining: 1 })
  let nextId = 0
  const call = async () => {
    const id = ++nextId
    const params = withMeta ? { name: "echo", arguments: { text: "hi" }, _meta: meta } : { name: "echo", arguments: { text: "hi" } }
    const res = await pool.request({
      path: target.pathname,
      method: "POST",
      headers,
      body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params })
    })
    const text = await res.body.text()
    if (res.statusCode !== 200 || !text.includes("\"result\"")) throw new Error(`${name}: ${res.statusCode} ${text}`)
  }
  return { name, pid, call }
}

const openSession = async (url: string): Promise<string> => {
  const post = (body: object, headers: Record<string, string>) =>
    fetch(url, { method: "POST", headers: { ...base, ...headers }, body: JSON.stringify(body) })
  const init = await post({
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: SESSION, capabilities: {}, clientInfo: { name: "eras-bench", version: "1.0.0" } }
  }, {})
  const session = init.headers.get("mcp-session-id")
  await init.text()
  if (session === null) throw new Error(`no session: ${init.status}`)
  const ready = await post({ jsonrpc: "2.0", method: "notifications/initialized" }, { "mcp-session-id": session, "mcp-protocol-version": SESSION })
  await ready.text()
  return session
}

const ours = await start(resolve(oursRoot, "bench/stateless-server/server-ours.ts"))
const before = beforeRoot === undefined ? undefined : await start(resolve(beforeRoot, "bench/stateless-server/server-ours.ts"))
const bare = await start(resolve(here, "../stateless-server/server-bare.ts"))
const minimal = await start(resolve(here, "../stateless-server/server-minimal.ts"))
const effectMin = await start(resolve(here, "../http/server-effect-min.ts"), ["--mode", "json"])
const effectChecked = await start(resolve(here, "../http/server-effect-checked.ts"))
const children = [
  ours.child,
  bare.child,
  minimal.child,
  effectMin.child,
  effectChecked.child,
  ...(before === undefined ? [] : [before.child])
]

const statelessHeaders = { ...base, "mcp-protocol-version": STATELESS, "mcp-method": "tools/call", "mcp-name": "echo" }
const bothEras = async (name: string, server: { child: ChildProcess; url: string }) => {
  const session = await openSession(server.url)
  return [
    variant(`${name} stateless`, server.child.pid!, server.url, statelessHeaders, true),
    variant(`${name} session`, server.child.pid!, server.url, { ...base, "mcp-protocol-version": SESSION, "mcp-session-id": session }, false)
  ]
}

const variants: ReadonlyArray<Variant> = [
  ...(await bothEras("ours", ours)),
  ...(before === undefined ? [] : await bothEras("before", before)),
  ...(await bothEras("bare", bare)),
  // The floors read the same request as `ours stateless` (headers and `_meta`), byte for byte.
  variant("node:http", minimal.child.pid!, minimal.url, statelessHeaders, true),
  // The bare server given a session's request instead (no `_meta`, a session id of a session's length).
  variant("node:http session", minimal.child.pid!, minimal.url, {
    ...base,
    "mcp-protocol-version": SESSION,
    "mcp-session-id": "00000000-0000-4000-8000-000000000000"
  }, false),
  variant("effect/http", effectMin.child.pid!, effectMin.url, statelessHeaders, true),
  variant("effect/http checked", effectChecked.child.pid!, effectChecked.url, statelessHeaders, true)
]

const drive = async (v: Variant, n: number) => {
  let left = n
  const worker = async () => {
    while (left-- > 0) await v.call()
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
}
const measure = async (v: Variant): Promise<number> => {
  const c0 = cpuOf(v.pid)
  await drive(v, total)
  return (cpuOf(v.pid) - c0) / total
}

try {
  for (const v of variants) await drive(v, warmup)
  const figures = new Map<string, Array<number>>(variants.map((v) => [v.name, []]))
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < variants.length; i++) {
      const v = variants[(i + r) % variants.length]
      figures.get(v.name)!.push(await measure(v))
    }
  }
  const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  const raw = median(figures.get("node:http")!)
  console.log(`server CPU µs per tools/call, c${concurrency}, ${total} calls x ${rounds} rounds (median, min; ÷ node:http)`)
  for (const [name, xs] of figures) {
    const m = median(xs)
    console.log(`  ${name.padEnd(20)} ${m.toFixed(1).padStart(7)}  min ${Math.min(...xs).toFixed(1).padStart(7)}  x${(m / raw).toFixed(2)}`)
  }
} finally {
  for (const child of children) child.kill("SIGTERM")
}
process.exit(0)
