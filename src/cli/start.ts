/**
 * `npm start`: the main job on the embedded default. Starts the example
 * server (both protocol eras) over Streamable HTTP in this process
 * (127.0.0.1, a free port) and over stdio as two child processes, then
 * drives it with `McpClient` once per transport and era: the handshake era
 * (pinned to 2025-11-25) and the stateless era (`protocol: "auto"`, which
 * finds 2026-07-28). Each run connects, inspects (server info, protocol
 * version, tools), calls `countdown` with progress; then a summary table.
 *
 * Everything belongs to a scope: the HTTP session is deleted and the server
 * stopped, each child's stdin is closed and the child has exited before the
 * table is printed; the program checks each (and that the stateless era
 * left no HTTP session behind). Exit 0 on success; otherwise one line on
 * stderr (`npm start: …`) and exit 1.
 *
 * Run: npx node src/cli/start.ts   (or node dist/cli/start.js after a build)
 */
import { extname } from "node:path"
import { fileURLToPath } from "node:url"
// Subpath imports: the package's index loads every Node module it has (about a second of startup).
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import type * as McpSchema from "effect/ai/McpSchema"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as References from "effect/References"
import * as Scope from "effect/Scope"
import type { ClientTransportShape } from "../client/ClientTransport.ts"
import * as McpClient from "../client/McpClient.ts"
import * as StdioClientTransport from "../client/StdioClientTransport.ts"
import * as StreamableHttpClientTransport from "../client/StreamableHttpClientTransport.ts"
import * as HttpServerTransport from "../server/HttpServerTransport.ts"
import * as ExampleServer from "./ExampleServer.ts"

/** The countdown each run calls: 5 steps of 100 ms. */
export const STEPS = 5
export const INTERVAL_MS = 100

class StartError extends Data.TaggedError("StartError")<{ readonly message: string }> {}

/** The two eras each transport is driven in: the handshake pinned, the stateless era found by `auto`. */
export const ERAS = {
  handshake: { protocol: "2025-11-25", expected: "legacy" },
  stateless: { protocol: "auto", expected: "modern" }
} as const satisfies Record<string, { protocol: McpClient.McpClientOptions["protocol"]; expected: string }>

export type Era = keyof typeof ERAS

export interface Row {
  readonly transport: "http" | "stdio"
  readonly era: Era
  readonly protocol: string
  readonly connectMs: number
  readonly tools: number
  readonly callMs: number
  readonly progress: number
  readonly result: string
}

// The children run the same kind of file as this one: .ts from the repository, .js from dist.
// EFFECT_MCP_START_STDIO_ENTRY replaces it (the tests use it to see a failing run).
const stdioEntry = process.env.EFFECT_MCP_START_STDIO_ENTRY ??
  fileURLToPath(new URL(`./example-server-stdio${extname(fileURLToPath(import.meta.url))}`, import.meta.url))

const out = (text: string) => Effect.sync(() => void process.stdout.write(`${text}\n`))

const since = (start: number) => Math.round(performance.now() - start)

const textOf = (result: McpSchema.CallToolResult) =>
  result.content.map((c) => (c.type === "text" ? c.text : `<${c.type}>`)).join("")

/** Connect, inspect, countdown with progress, over one transport in one era; closed with the scope. */
const exercise = <E, R>(transport: Row["transport"], era: Era, connect: Effect.Effect<ClientTransportShape, E, R>) =>
  Effect.gen(function*() {
    const tag = `[${transport} ${era}]`
    const started = performance.now()
    const client = yield* McpClient.connect(connect, {
      clientInfo: { name: "effect-mcp-start", version: "0.1.0" },
      protocol: ERAS[era].protocol
    })
    const connectMs = since(started)
    if (client.era !== ERAS[era].expected) {
      return yield* new StartError({ message: `${transport}: expected the ${era} era, got protocol ${client.protocolVersion}` })
    }
    const tools = yield* client.listAllTools()
    const info = client.serverInfo
    yield* out(`${tag} ${info.name} ${info.version}, protocol ${client.protocolVersion}, connected in ${connectMs} ms`)
    yield* out(`${tag} tools: ${tools.map((t) => t.name).join(", ")}`)
    let progress = 0
    const callStarted = performance.now()
    const result = yield* client.callTool(
      { name: "countdown", arguments: { steps: STEPS, intervalMs: INTERVAL_MS } },
      {
        timeout: "10 seconds",
        onProgress: (p) => {
          progress++
          const of = p.total === undefined ? "" : `/${p.total}`
          return out(`${tag} progress ${p.progress}${of}${p.message === undefined ? "" : `  ${p.message}`}`)
        }
      }
    )
    const callMs = since(callStarted)
    const text = textOf(result)
    if (result.isError === true) return yield* new StartError({ message: `${transport} ${era}: countdown failed: ${text}` })
    if (progress !== STEPS) {
      return yield* new StartError({
        message: `${transport} ${era}: expected ${STEPS} progress notifications, got ${progress}`
      })
    }
    yield* out(`${tag} result: ${text} (${callMs} ms)`)
    return {
      transport,
      era,
      protocol: client.protocolVersion,
      connectMs,
      tools: tools.length,
      callMs,
      progress,
      result: text
    } satisfies Row
  }).pipe(Effect.scoped)

/** The example server over HTTP in this process, for the life of the scope: one run per era. */
const overHttp = Effect.gen(function*() {
  const services = yield* Layer.build(ExampleServer.layerHttp({ host: "127.0.0.1", port: 0 }))
  const server = Context.get(services, HttpServerTransport.HttpServerTransport)
  const url = yield* Option.match(server.url, {
    onNone: () => Effect.fail(new StartError({ message: "the HTTP server has no address" })),
    onSome: Effect.succeed
  })
  yield* out(`[http] example server listening on ${url}`)
  const rows: Array<Row> = []
  for (const era of ["handshake", "stateless"] as const) {
    rows.push(yield* exercise("http", era, StreamableHttpClientTransport.make({ url })))
    // The client's scope is closed: its DELETE must have ended the session (the stateless era opens none).
    const left = yield* server.sessionIds
    if (left.length > 0) {
      return yield* new StartError({ message: `http ${era}: ${left.length} session(s) still open after the client closed` })
    }
  }
  return rows
}).pipe(Effect.scoped)

/**
 * Spawns the example server on stdio now, in a scope of its own, so that the
 * child starts up while the HTTP runs go on.
 */
const spawnStdio = (era: Era) =>
  Effect.gen(function*() {
    const scope = yield* Scope.fork(yield* Effect.scope)
    yield* out(`[stdio ${era}] spawning ${process.execPath} ${stdioEntry}`)
    const transport = yield* StdioClientTransport.make({
      command: process.execPath,
      args: [stdioEntry],
      shutdown: { gracePeriod: "2 seconds" }
    }).pipe(Scope.provide(scope))
    yield* out(`[stdio ${era}] child pid ${transport.pid}`)
    return { era, transport, scope }
  })

/** The stdio run over a child spawned earlier; the child is gone when this completes. */
const overStdio = (child: Effect.Success<ReturnType<typeof spawnStdio>>) =>
  Effect.gen(function*() {
    const row = yield* exercise("stdio", child.era, Effect.succeed(child.transport))
    // Closing stdin ends the server; the transport waits for the exit (SIGTERM after the grace period).
    yield* Scope.close(child.scope, Exit.void)
    if (isAlive(child.transport.pid)) {
      return yield* new StartError({ message: `stdio ${child.era}: child ${child.transport.pid} still running` })
    }
    return row
  })

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const pad = (s: string, n: number) => s.padEnd(n)

export const table = (rows: ReadonlyArray<Row>): ReadonlyArray<string> => {
  const header = ["transport", "era", "protocol", "connect", "tools", "call", "progress", "result"]
  const cells = rows.map((r) => [
    r.transport,
    r.era,
    r.protocol,
    `${r.connectMs} ms`,
    String(r.tools),
    `${r.callMs} ms`,
    String(r.progress),
    r.result
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)))
  const line = (c: ReadonlyArray<string>) => c.map((v, i) => (i === c.length - 1 ? v : pad(v, widths[i]!))).join("  ")
  return [line(header), ...cells.map(line)]
}

export const main = Effect.gen(function*() {
  const started = performance.now()
  const children = [yield* spawnStdio("handshake"), yield* spawnStdio("stateless")]
  const http = yield* overHttp
  const stdio: Array<Row> = []
  for (const child of children) stdio.push(yield* overStdio(child))
  yield* out("")
  for (const l of table([...http, ...stdio])) yield* out(l)
  yield* out("")
  yield* out(
    `ok: both transports in both eras torn down (HTTP session deleted, server stopped, children exited) in ${since(started)} ms total`
  )
}).pipe(Effect.scoped)

const fail = (cause: Cause.Cause<unknown>) =>
  Effect.sync(() => {
    const error = Cause.squash(cause)
    const message = (error instanceof Error ? error.message : String(error)).split("\n")[0]
    // A child that died usually said why on its stderr.
    const tail = typeof error === "object" && error !== null
      ? (error as { stderrTail?: ReadonlyArray<string> | undefined }).stderrTail
      : undefined
    const last = tail?.filter((l) => l.trim() !== "").at(-1)
    process.stderr.write(`npm start: ${message}${last === undefined ? "" : `; server stderr: ${last.trim()}`}\n`)
    process.exitCode = 1
  })

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  main.pipe(
    Effect.timeoutOrElse({
      duration: "60 seconds",
      orElse: () => Effect.fail(new StartError({ message: "did not finish within 60 seconds" }))
    }),
    Effect.catchCause((cause) => (Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : fail(cause))),
    Effect.provideService(References.MinimumLogLevel, "Warn"),
    Effect.provide(Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici, Layer.succeed(Logger.LogToStderr, true))),
    NodeRuntime.runMain({ disableErrorReporting: true })
  )
}
