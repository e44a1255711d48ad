/**
 * The Effect work per request of the hot paths, counted exactly
 * (test/fixtures/EffectWork.ts: steps the runtime evaluates, fibers started,
 * tasks queued on dispatchers),
 * one request at a time after a warm-up:
 * - the HTTP server: `tools/call` on this project's server (McpServer, Schema
 *   params) in 2026-07-28 and in a 2025-11-25 session, and on one bare
 *   `effect/http` route doing the same JSON work (the floor);
 * - the stdio client: `McpClient.callTool` against bench/raw-responder.ts in
 *   both eras, with 0 and 20 progress notifications per call, with and
 *   without an `onProgress` callback (`Effect.void`, one step of its own each);
 * - the HTTP client: `McpClient.callTool` over Streamable HTTP against this
 *   project's server in both eras (and the transport's own request in a
 *   session), beside `effect/http`'s client posting the same body alone.
 *
 *   npx node bench/profile/effect-work.ts [calls=200] [--by-kind[=session]]
 *
 * The counts do not depend on the machine or its load. With `--by-kind`, only
 * the HTTP server's 2026-07-28 `tools/call` (with `=session`, its 2025-11-25
 * session's; with `=stdio`, the stdio client's 2025-11-25 `McpClient.callTool`
 * without progress, `=stdio-progress` with 20 and an `onProgress`), its steps
 * listed by kind and the function each carries (or, for a value, the
 * continuation it goes to), per request, most frequent first: for finding
 * steps a path could do without.
 */
import { createServer } from "node:http"
import { NodeHttpClient, NodeHttpServer, NodeServices } from "@effect/platform-node"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import {
  HttpClient,
  HttpClientRequest,
  HttpRouter,
  HttpServer,
  HttpServerRequest,
  HttpServerResponse
} from "effect/http"
import { echoCallServer as definition, STATELESS_META as META } from "../../test/fixtures/echo-call-server.ts"
import * as EffectWork from "../../test/fixtures/EffectWork.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import {
  loadHttpServerTransport,
  loadMcpClient,
  loadStdioClientTransport,
  loadStreamableHttpClientTransport
} from "../our-modules.ts"

const kindFlag = process.argv.find((a) => a.startsWith("--by-kind"))
const byKind = kindFlag !== undefined
const kindsOfSession = kindFlag === "--by-kind=session"
const kindsOfStdio = kindFlag === "--by-kind=stdio" || kindFlag === "--by-kind=stdio-progress"
const calls = Number(process.argv.slice(2).find((a) => !a.startsWith("--by-kind")) ?? "200")
const warm = Math.max(20, calls / 4)
const HttpServerTransport = await loadHttpServerTransport()
const McpClient = await loadMcpClient()
const StdioClientTransport = await loadStdioClientTransport()
const StreamableHttpClientTransport = await loadStreamableHttpClientTransport()

const rows: Array<{ path: string; steps: number; fibers: number; tasks: number }> = []
const report = (path: string, work: EffectWork.EffectWork) => rows.push({ path, ...work })

const runs: EffectWork.Runs = { warm, calls }
const measure = (counter: EffectWork.WorkCounter, once: () => Promise<unknown>) =>
  Effect.runPromise(EffectWork.perRun(counter, once, runs))

const postJson = (url: string, body: object, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify(body)
  })

// --- the HTTP server ----------------------------------------------------------
let nextId = 0
const toolCall = (params: object) => ({ jsonrpc: "2.0", id: ++nextId, method: "tools/call", params })

/** Each kind of step the counter saw since it was last read, per request of `calls`. */
const printSteps = (counter: EffectWork.WorkCounter, totalLabel = "in all") => {
  let total = 0
  for (const [kind, n] of counter.steps()) {
    total += n
    process.stdout.write(`${(n / calls).toFixed(2).padStart(6)}  ${kind}\n`)
  }
  process.stdout.write(`${(total / calls).toFixed(2).padStart(6)}  ${totalLabel}\n`)
}

/** Each kind of step counted over `calls` requests after the warm-up, per request. */
const printKinds = async (counter: EffectWork.WorkCounter, once: () => Promise<unknown>) => {
  for (let i = 0; i < warm; i++) await once()
  counter.steps()
  for (let i = 0; i < calls; i++) await once()
  printSteps(counter)
}

const responder = new URL("../raw-responder.ts", import.meta.url).pathname

if (kindsOfStdio) {
  const progress = kindFlag === "--by-kind=stdio-progress" ? 20 : 0
  const counter = EffectWork.make({ bySteps: true })
  await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const client = yield* McpClient.connect(StdioClientTransport.make({
      command: process.execPath,
      args: [responder, "--progress", String(progress)]
    }), { clientInfo: { name: "work", version: "1.0.0" }, protocol: "2025-11-25" })
    const params = { name: "echo", arguments: { text: "hi" } }
    const call = progress === 0 ? client.callTool(params) : client.callTool(params, { onProgress: () => Effect.void })
    for (let i = 0; i < warm; i++) yield* call
    counter.steps()
    for (let i = 0; i < calls; i++) yield* call
    printSteps(counter, "in all (the loop's own step included)")
  })).pipe(Effect.provide(NodeServices.layer), Effect.provide(counter.layer)))
  process.exit(0)
}

await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const counter = EffectWork.make({ bySteps: byKind })
  const handle = yield* McpServer.toHandler(definition)
  const context = yield* Layer.build(HttpServerTransport.layer(handle.handler, { port: 0 }).pipe(Layer.provide(counter.layer)))
  const url = Option.getOrThrow(Context.get(context, HttpServerTransport.HttpServerTransport).url)
  yield* Effect.promise(async () => {
    const stateless = { "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "echo" }
    const statelessCall = async () => {
      await (await postJson(url, toolCall({ name: "echo", arguments: { text: "hi" }, _meta: META }), stateless)).text()
    }
    if (byKind && !kindsOfSession) {
      await printKinds(counter, statelessCall)
      process.exit(0)
    }
    if (!byKind) report("HTTP server, 2026-07-28", await measure(counter, statelessCall))
    const init = await postJson(url, {
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "work", version: "1.0.0" } }
    })
    await init.text()
    const session = { "mcp-protocol-version": "2025-11-25", "mcp-session-id": init.headers.get("mcp-session-id")! }
    await (await postJson(url, { jsonrpc: "2.0", method: "notifications/initialized" }, session)).text()
    const sessionCall = async () => {
      await (await postJson(url, toolCall({ name: "echo", arguments: { text: "hi" } }), session)).text()
    }
    if (byKind) {
      await printKinds(counter, sessionCall)
      process.exit(0)
    }
    report("HTTP server, 2025-11-25 session", await measure(counter, sessionCall))
  })
})))

// The floor: one effect/http route doing the same JSON work (as bench/http/server-effect-min.ts).
await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const counter = EffectWork.make()
  const route = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const msg = JSON.parse(yield* Effect.orDie(request.text)) as { id: number }
    const result = { content: [{ type: "text", text: "echo: hi" }] }
    return HttpServerResponse.text(JSON.stringify({ jsonrpc: "2.0", id: msg.id, result }), { contentType: "application/json" })
  })
  const served = HttpRouter.serve(HttpRouter.add("POST", "/mcp", route), { disableLogger: true, disableListenLog: true })
  const context = yield* Layer.build(
    Layer.provideMerge(served, NodeHttpServer.layer(() => createServer(), { host: "127.0.0.1", port: 0 })).pipe(
      Layer.provide(counter.layer)
    )
  )
  const address = Context.get(context, HttpServer.HttpServer).address
  const url = `http://127.0.0.1:${address._tag === "UnixPathAddress" ? 0 : address.port}/mcp`
  yield* Effect.promise(async () => {
    report("HTTP, effect/http route alone", await measure(counter, async () => {
      await (await postJson(url, toolCall({ name: "echo", arguments: { text: "hi" } }))).text()
    }))
  })
})))

// --- the stdio client ---------------------------------------------------------
for (const era of ["2025-11-25", "2026-07-28"] as const) {
  for (const progress of [0, 20]) {
    const counter = EffectWork.make()
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const client = yield* McpClient.connect(StdioClientTransport.make({
        command: process.execPath,
        args: [responder, "--progress", String(progress), ...(era === "2026-07-28" ? ["--stateless"] : [])]
      }), { clientInfo: { name: "work", version: "1.0.0" }, protocol: era })
      const params = { name: "echo", arguments: { text: "hi" } }
      const ways = progress === 0
        ? [["", client.callTool(params)] as const]
        : [
          [", no onProgress", client.callTool(params)] as const,
          [", onProgress", client.callTool(params, { onProgress: () => Effect.void })] as const
        ]
      for (const [label, call] of ways) {
        report(`stdio client, ${era}, ${progress} progress${label}`, yield* EffectWork.perEffect(counter, call, runs))
      }
    })).pipe(Effect.provide(NodeServices.layer), Effect.provide(counter.layer)))
  }
}

// --- the HTTP client -----------------------------------------------------------
// Against this project's server (not counted: it runs without the counter), and
// effect/http's own client posting the same body and parsing the answer (the floor).
await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const handle = yield* McpServer.toHandler(definition)
  const context = yield* Layer.build(HttpServerTransport.layer(handle.handler, { port: 0 }))
  const url = Option.getOrThrow(Context.get(context, HttpServerTransport.HttpServerTransport).url)
  const params = { name: "echo", arguments: { text: "hi" } }
  for (const era of ["2025-11-25", "2026-07-28"] as const) {
    const counter = EffectWork.make()
    yield* Effect.scoped(Effect.gen(function*() {
      const transport = yield* StreamableHttpClientTransport.make({ url })
      const client = yield* McpClient.fromTransport(transport, {
        clientInfo: { name: "work", version: "1.0.0" },
        protocol: era
      })
      if (era === "2025-11-25") {
        const request = transport.request("tools/call", params)
        report(`HTTP client, ${era}, transport's request`, yield* EffectWork.perEffect(counter, request, runs))
      }
      const call = client.callTool(params)
      report(`HTTP client, ${era}, McpClient.callTool`, yield* EffectWork.perEffect(counter, call, runs))
    })).pipe(Effect.provide(NodeHttpClient.layerUndici), Effect.provide(counter.layer))
  }
  const counter = EffectWork.make()
  const body = JSON.stringify(toolCall({ ...params, _meta: META }))
  const headers = {
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "echo"
  }
  yield* Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const once = Effect.flatMap(
      client.execute(HttpClientRequest.bodyText(HttpClientRequest.post(url, { headers }), body, "application/json")),
      (response) => Effect.map(response.text, (text) => JSON.parse(text) as unknown)
    )
    report("HTTP, effect/http client alone", yield* EffectWork.perEffect(counter, Effect.orDie(once), runs))
  }).pipe(Effect.provide(NodeHttpClient.layerUndici), Effect.provide(counter.layer))
})))

process.stdout.write("| path | steps per call | fibers per call | dispatcher tasks per call |\n|---|---:|---:|---:|\n")
for (const row of rows) {
  process.stdout.write(`| ${row.path} | ${+row.steps.toFixed(2)} | ${+row.fibers.toFixed(2)} | ${+row.tasks.toFixed(2)} |\n`)
}
process.exit(0)
