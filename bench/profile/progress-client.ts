/**
 * Client CPU per call with progress notifications (bench/raw-responder.ts
 * `--progress n` sends n of them before each `tools/call` result):
 *
 *   npx node bench/profile/progress-client.ts <client> <op> <progress> <concurrency> <total> [warm-up]
 *
 * - client `raw`: the bare Promise requester (bench/clients/raw-core.ts), the floor;
 *   `ours`: the stdio transport's `request`, the call carrying a progress token;
 *   `mcp`: `McpClient.callTool` with an `onProgress` callback, as users write it;
 *   `mcp-plain`: `McpClient.callTool` without one (progress still restarts its timeout).
 * - op `callTool` or `ping` (`ping` carries no progress).
 * - PROTOCOL: pin `McpClient` to this revision; `2026-07-28` also starts the responder
 *   `--stateless` (the default is the session era, negotiated by `initialize`).
 * - SRC_ROOT: where this project's sources load from (default this tree's `src/`),
 *   so that a copy of another commit's `src/` can be measured by the same driver.
 *
 * Prints one JSON line { client, op, progress, concurrency, cpuUs, rps, progressSeen }.
 * Run it under `npx node --cpu-prof --cpu-prof-dir=/tmp/x ...` and summarise with
 * bench/profile/summarize.ts.
 *
 * INSTR=1 runs the client again under valgrind's callgrind, counting its
 * instructions only while the measured calls run, and adds `instructionsPerCall`:
 * a count that machine load does not move, for comparing two builds of the
 * client (the responder, not traced, then outpaces the client, so each read
 * brings many lines).
 */
import { execFileSync } from "node:child_process"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { connect, INITIALIZE_PARAMS } from "../clients/raw-core.ts"
import { driveEffect } from "../clients/effect-drive.ts"
import { drive } from "../stats.ts"
import { count, totalIn, valgrindArgs } from "./callgrind.ts"

const [client = "ours", op = "callTool", progressText = "20", concurrencyText = "4", totalText = "5000", warmText = "2000"] =
  process.argv.slice(2)
const progress = Number(progressText)

if (process.env.INSTR === "1") {
  const out = `/tmp/progress-client-callgrind.${process.pid}.out`
  const line = execFileSync("valgrind", valgrindArgs(out, [...process.execArgv, ...process.argv.slice(1)]), {
    env: { ...process.env, INSTR: "counting" },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"]
  })
  const counted = totalIn(out)
  const cell = JSON.parse(line.trim().split("\n").at(-1)!) as Record<string, unknown>
  const calls = Number(totalText)
  console.log(JSON.stringify({ ...cell, instructionsPerCall: counted === undefined ? undefined : Math.round(counted / calls) }))
  process.exit(0)
}
/** Turns callgrind's counting on or off in this process (when it runs under callgrind). */
const counting = (on: boolean): Promise<void> =>
  process.env.INSTR !== "counting" ? Promise.resolve() : count(process.pid, on)
const concurrency = Number(concurrencyText)
const total = Number(totalText)
const warm = Number(warmText)

const srcRoot = new URL(process.env.SRC_ROOT ? `file://${process.env.SRC_ROOT.replace(/\/?$/, "/")}` : "../../src/", import.meta.url)
const load = <M>(module: string): Promise<M> => import(new URL(`${module}.ts`, srcRoot).href)

const responder = new URL("../raw-responder.ts", import.meta.url).pathname
const env = { ...process.env }
const protocol = process.env.PROTOCOL
const args = [responder, "--progress", String(progress), ...(protocol === "2026-07-28" ? ["--stateless"] : [])]
const toolParams = { name: "echo", arguments: { text: "hi" } }
let progressSeen = 0

interface Driven {
  readonly run: (n: number) => Promise<{ rps: number }>
  readonly close: () => Promise<void>
}

const makeRaw = async (): Promise<Driven> => {
  const connection = connect(process.execPath, args)
  let token = 0
  const request = (method: string, params?: unknown) =>
    new Promise<unknown>((resolve) => connection.send(method, params, resolve))
  await request("initialize", INITIALIZE_PARAMS)
  connection.notify("notifications/initialized")
  const call = op === "ping"
    ? () => request("ping")
    : () => request("tools/call", { ...toolParams, _meta: { progressToken: `t${++token}` } })
  return { run: (n) => drive(call, n, concurrency), close: connection.close }
}

const makeOurs = async (): Promise<Driven> => {
  const { ClientTransport } = await load<typeof import("../../src/client/ClientTransport.ts")>("client/ClientTransport")
  const StdioClientTransport = await load<typeof import("../../src/client/StdioClientTransport.ts")>(
    "client/StdioClientTransport"
  )
  const NodeSpawner = await load<typeof import("../../src/client/NodeSpawner.ts")>("client/NodeSpawner")
  const runtime = ManagedRuntime.make(
    StdioClientTransport.layer({ command: process.execPath, args, env }).pipe(Layer.provide(NodeSpawner.layer))
  )
  const transport = await runtime.runPromise(ClientTransport)
  await runtime.runPromise(
    transport.request("initialize", INITIALIZE_PARAMS).pipe(Effect.andThen(transport.notify("notifications/initialized")))
  )
  let token = 0
  const call = op === "ping"
    ? transport.request("ping")
    : Effect.suspend(() => transport.request("tools/call", { ...toolParams, _meta: { progressToken: `t${++token}` } }))
  return { run: (n) => runtime.runPromise(driveEffect(call, n, concurrency)), close: () => runtime.dispose() }
}

const makeMcp = async (withCallback: boolean): Promise<Driven> => {
  const McpClient = await load<typeof import("../../src/client/McpClient.ts")>("client/McpClient")
  const StdioClientTransport = await load<typeof import("../../src/client/StdioClientTransport.ts")>(
    "client/StdioClientTransport"
  )
  const NodeSpawner = await load<typeof import("../../src/client/NodeSpawner.ts")>("client/NodeSpawner")
  const runtime = ManagedRuntime.make(
    McpClient.layer({
      clientInfo: { name: "progress-profile", version: "1.0.0" },
      ...(protocol === undefined ? {} : { protocol: protocol as "2025-11-25" })
    }).pipe(
      Layer.provide(StdioClientTransport.layer({ command: process.execPath, args, env })),
      Layer.provide(NodeSpawner.layer)
    )
  )
  const client = await runtime.runPromise(McpClient.McpClient)
  const onProgress = () =>
    Effect.sync(() => {
      progressSeen++
    })
  const call = op === "ping"
    ? client.ping()
    : withCallback
    ? client.callTool(toolParams, { onProgress })
    : client.callTool(toolParams)
  return { run: (n) => runtime.runPromise(driveEffect(call, n, concurrency)), close: () => runtime.dispose() }
}

const driven = client === "raw"
  ? await makeRaw()
  : client === "ours"
  ? await makeOurs()
  : client === "mcp"
  ? await makeMcp(true)
  : client === "mcp-plain"
  ? await makeMcp(false)
  : undefined
if (driven === undefined) throw new Error(`unknown client ${client} (raw, ours, mcp, mcp-plain)`)

await driven.run(warm)
progressSeen = 0
await counting(true)
const cpu0 = process.cpuUsage()
const measured = await driven.run(total)
const cpu = process.cpuUsage(cpu0)
await counting(false)
process.stdout.write(
  JSON.stringify({
    client,
    op,
    progress: op === "ping" ? 0 : progress,
    concurrency,
    cpuUs: (cpu.user + cpu.system) / total,
    rps: measured.rps,
    progressSeen: progressSeen / total
  }) + "\n"
)
await driven.close()
process.exit(0)
