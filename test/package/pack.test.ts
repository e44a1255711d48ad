/**
 * The package as a user gets it: `npm pack` (whose `prepack` cleans and
 * builds dist), the tarball installed into a fresh project outside the
 * repository next to the peer dependencies at the versions this repository
 * pins, then a program there that imports every public entry point by
 * package name, spawns a stdio server also written against the installed
 * package, and calls its tool; `tsc` checks the same program strictly
 * (NodeNext, skipLibCheck false), which proves the published declarations
 * are complete and resolvable.
 *
 * The pack runs on a copy of what the package ships: package.json, the docs,
 * src, and the files of dist/ that the current sources emit (none of a
 * deleted source, which `prepack`'s clean keeps out of a published tarball).
 * The build is the one `npm test` made before the tests (a stale or missing
 * one fails here, as the CLI tests do); packing with `--ignore-scripts` spares
 * building it a second time. npm runs on
 * the Node that runs this test (Node 22 from the `node` devDependency), and
 * installs with --prefer-offline: after `npm ci` the tarballs come from the
 * npm cache; only package metadata may come from the registry.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { delimiter, dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { builtCurrent, builtFiles } from "../fixtures/build.ts"

const repo = fileURLToPath(new URL("../..", import.meta.url))
const manifest = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as {
  readonly name: string
  readonly version: string
  readonly bin: Readonly<Record<string, string>>
  readonly devDependencies: Readonly<Record<string, string>>
}
const pinned = (name: string): string => `${name}@${manifest.devDependencies[name]}`
const hasCli = existsSync(join(repo, "src/cli/main.ts"))

// Our Node first on PATH: npm's `#!/usr/bin/env node` and the installed bin run on it, not on the machine's node.
// npm's per-script variables of an enclosing `npm test` stay out of the nested npm runs.
const env: NodeJS.ProcessEnv = Object.fromEntries(
  Object.entries({ ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ""}` })
    .filter(([key]) => !/^npm_(lifecycle_|package_|command$|config_local_prefix$)/i.test(key))
)

interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
  readonly seconds: number
}

const run = (command: string, args: ReadonlyArray<string>, cwd: string, timeoutMs: number): Promise<Run> => {
  const started = performance.now()
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env, encoding: "utf8", timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 16 << 20 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1
      resolve({ code, stdout, stderr, seconds: (performance.now() - started) / 1000 })
    })
  })
}

const ok = (step: string, result: Run): Run => {
  if (result.code !== 0) {
    throw new Error(`${step} exited ${result.code}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`)
  }
  return result
}

const consumerTsconfig = {
  compilerOptions: {
    strict: true,
    exactOptionalPropertyTypes: true,
    target: "ES2022",
    // effect's own declarations name Web Crypto and `Transferable` types.
    lib: ["ES2022", "DOM"],
    module: "NodeNext",
    moduleResolution: "NodeNext",
    types: ["node"],
    verbatimModuleSyntax: true,
    erasableSyntaxOnly: true,
    skipLibCheck: false,
    noEmit: true
  },
  include: ["*.ts"]
}

const serverSource = `// A stdio MCP server written only against the installed package.
import { NodeRuntime, NodeStdio } from "@effect/platform-node"
import { Effect, Schema } from "effect"
import { RpcError } from "effect-mcp-transport/McpError"
import { McpServer, StdioServerTransport } from "effect-mcp-transport/server"

const AddParams = Schema.Struct({
  name: Schema.Literal("add"),
  arguments: Schema.Struct({ a: Schema.Number, b: Schema.Number })
})

const server = McpServer.make({ serverInfo: { name: "packed-adder", version: "1.0.0" } }).pipe(
  McpServer.method("tools/list", {}, () =>
    Effect.succeed({
      tools: [{
        name: "add",
        inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] }
      }]
    })),
  McpServer.method("tools/call", { params: AddParams }, ({ arguments: { a, b } }) =>
    Number.isFinite(a + b)
      ? Effect.succeed({ content: [{ type: "text", text: String(a + b) }], structuredContent: { sum: a + b } })
      : Effect.fail(new RpcError({ code: -32602, rpcMessage: "not finite" })))
)

McpServer.runStdio(server).pipe(Effect.provide([NodeStdio.layer, StdioServerTransport.layerLogger]), NodeRuntime.runMain)
`

const mainSource = `// A client program written only against the installed package: spawns server.ts over stdio, calls its tool.
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect } from "effect"
import * as Root from "effect-mcp-transport"
import * as Bridge from "effect-mcp-transport/bridge"
import { McpClient, StdioClientTransport } from "effect-mcp-transport/client"
import * as NodeSpawner from "effect-mcp-transport/client/NodeSpawner"
import * as StdioClientTransportModule from "effect-mcp-transport/client/StdioClientTransport"
import * as JsonRpc from "effect-mcp-transport/JsonRpc"
import * as JsonRpcSchema from "effect-mcp-transport/JsonRpcSchema"
import * as McpError from "effect-mcp-transport/McpError"
import * as ProtocolVersion from "effect-mcp-transport/ProtocolVersion"
import { McpServer } from "effect-mcp-transport/server"
import * as McpServerModule from "effect-mcp-transport/server/McpServer"
import { Arbitraries, FaultInjection } from "effect-mcp-transport/testing"
import { fileURLToPath } from "node:url"

const server = fileURLToPath(new URL("./server.ts", import.meta.url))

const program = Effect.gen(function*() {
  const client = yield* McpClient.connect(
    StdioClientTransport.make({ command: process.execPath, args: [server], stderr: { log: false } }),
    // The server loads the whole package first: on a busy machine that can outlast the default 5 s probe,
    // and the client would then settle for the handshake era.
    { clientInfo: { name: "packed-consumer", version: "1.0.0" }, probeTimeout: "60 seconds" }
  )
  const tools = yield* client.listAllTools()
  const result = yield* client.callTool({ name: "add", arguments: { a: 2, b: 3 } })
  const refused = yield* client.callTool({ name: "add", arguments: { a: 1e308, b: 1e308 } }).pipe(
    Effect.map(() => "accepted"),
    Effect.catchReason("McpServerError", "RpcError", (error: McpError.RpcError) => Effect.succeed(\`RpcError \${error.code} \${error.rpcMessage}\`))
  )
  const decoded = JsonRpc.decode(JSON.stringify(JsonRpc.request(1, "ping")))
  yield* Console.log(JSON.stringify({
    server: client.serverInfo.name,
    era: client.era,
    protocolVersion: client.protocolVersion,
    supported: ProtocolVersion.isKnown(client.protocolVersion),
    tools: tools.map((tool) => tool.name),
    structured: result.structuredContent,
    content: result.content,
    refused,
    decoded: decoded._tag,
    sameModules: Root.McpClient === McpClient && Root.McpServer === McpServer && Root.JsonRpc.decode === JsonRpc.decode &&
      Root.Bridge === Bridge && Root.JsonRpcSchema.Message === JsonRpcSchema.Message &&
      StdioClientTransportModule.make === StdioClientTransport.make && McpServerModule.make === McpServer.make &&
      Root.NodeSpawner.layer === NodeSpawner.layer,
    bridge: typeof Bridge.make === "function" && typeof Bridge.runStdio === "function",
    testingKit: typeof FaultInjection.makePair === "function" && typeof Arbitraries.message === "object"
  }))
})

program.pipe(Effect.scoped, Effect.provide(NodeSpawner.layer), NodeRuntime.runMain)
`

describe("the packed package installed into a fresh project", () => {
  const work = mkdtempSync(join(tmpdir(), "effect-mcp-pack-"))
  const stage = join(work, "stage")
  const app = join(work, "app")
  const installed = join(app, "node_modules", manifest.name)
  const timings: Array<string> = []
  let packed: ReadonlyArray<string> = []

  beforeAll(async () => {
    if (!builtCurrent(repo)) throw new Error("dist/ is missing or older than src/: run `npm run build` first")
    mkdirSync(stage)
    for (const entry of ["package.json", "README.md", "CHANGELOG.md", "LICENSE", "src"]) {
      if (existsSync(join(repo, entry))) cpSync(join(repo, entry), join(stage, entry), { recursive: true })
    }
    for (const file of builtFiles(repo)) cpSync(join(repo, "dist", file), join(stage, "dist", file))
    const pack = ok("npm pack", await run("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", work], stage, 300_000))
    timings.push(`npm pack ${pack.seconds.toFixed(1)} s`)
    const report = JSON.parse(pack.stdout.slice(pack.stdout.search(/^\[/m))) as Array<{
      readonly filename: string
      readonly size: number
      readonly unpackedSize: number
      readonly files: ReadonlyArray<{ readonly path: string }>
    }>
    packed = report[0]!.files.map((file) => file.path)
    timings.push(`tarball ${(report[0]!.size / 1024).toFixed(0)} KiB (${packed.length} files, ${(report[0]!.unpackedSize / 1024).toFixed(0)} KiB unpacked)`)

    mkdirSync(app)
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "pack-consumer", private: true, type: "module" }))
    const install = ok(
      "npm install",
      await run("npm", [
        "install",
        "--prefer-offline",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        join(work, report[0]!.filename),
        pinned("effect"),
        pinned("@effect/platform-node"),
        pinned("typescript"),
        pinned("@types/node")
      ], app, 300_000)
    )
    timings.push(`npm install ${install.seconds.toFixed(1)} s`)
    writeFileSync(join(app, "tsconfig.json"), JSON.stringify(consumerTsconfig, null, 2))
    writeFileSync(join(app, "server.ts"), serverSource)
    writeFileSync(join(app, "main.ts"), mainSource)
  }, 600_000)

  afterAll(async () => {
    console.log(`pack test: ${timings.join(", ")}`)
    // The project holds typescript and effect: tens of MB to delete on a busy disk.
    await rm(work, { recursive: true, force: true })
  }, 180_000)

  it("ships dist and src, no tests, benchmarks or examples, and every export target", () => {
    expect(packed).toContain("package.json")
    expect(packed).toContain("dist/index.js")
    expect(packed).toContain("LICENSE")
    expect(packed).toContain("CHANGELOG.md")
    expect(packed.filter((path) => !/^(dist|src)\/|^(package\.json|README\.md|CHANGELOG\.md|LICENSE)$/.test(path))).toEqual([])
    const exported = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as {
      readonly exports: Readonly<Record<string, string | null | { readonly types: string; readonly default: string }>>
    }
    for (const target of Object.values(exported.exports)) {
      // `null` closes a folder under a pattern; a pattern's target is checked by its folder.
      if (target === null) continue
      for (const file of typeof target === "string" ? [target] : [target.types, target.default]) {
        expect(existsSync(join(installed, file.includes("*") ? dirname(file) : file)), file).toBe(true)
      }
    }
  })

  it("publishes declarations that import .js files, never .ts sources", () => {
    const declarations = readdirSync(join(installed, "dist"), { recursive: true, encoding: "utf8" })
      .filter((path) => path.endsWith(".d.ts"))
    expect(declarations.length).toBeGreaterThan(20)
    const leaks = declarations.filter((path) =>
      /(?:from\s*|import\s*\(\s*|import\s+)["']\.{1,2}\/[^"']*\.ts["']/.test(readFileSync(join(installed, "dist", path), "utf8"))
    )
    expect(leaks).toEqual([])
  })

  it("runs a program that imports every entry point, spawns a stdio server from the package and calls its tool", async () => {
    const result = ok("node main.ts", await run(process.execPath, ["main.ts"], app, 120_000))
    timings.push(`program ${result.seconds.toFixed(1)} s`)
    expect(JSON.parse(result.stdout.trim())).toEqual({
      server: "packed-adder",
      era: "modern",
      protocolVersion: "2026-07-28",
      supported: true,
      tools: ["add"],
      structured: { sum: 5 },
      content: [{ type: "text", text: "5" }],
      refused: "RpcError -32602 not finite",
      decoded: "Single",
      sameModules: true,
      bridge: true,
      testingKit: true
    })
  }, 150_000)

  it("keeps internal modules behind the exports map", async () => {
    const result = await run(process.execPath, [
      "--input-type=module",
      "-e",
      `import("${manifest.name}/dist/client/internal/ClientCore.js").then(() => console.log("reachable"), (e) => console.log(e.code))`
    ], app, 60_000)
    expect(result.stdout.trim()).toBe("ERR_PACKAGE_PATH_NOT_EXPORTED")
    for (
      const hidden of [
        "client/manager/Config",
        "server/http/OutStream",
        "client/internal/ClientCore",
        "server/internal/ServerSession",
        "server/auth/internal/Jws"
      ]
    ) {
      const closed = await run(process.execPath, [
        "--input-type=module",
        "-e",
        `import("${manifest.name}/${hidden}").then(() => console.log("reachable"), (e) => console.log(e.code))`
      ], app, 60_000)
      expect(closed.stdout.trim(), hidden).toBe("ERR_PACKAGE_PATH_NOT_EXPORTED")
    }
  })

  it("type-checks against the published declarations (strict, NodeNext, skipLibCheck false)", async () => {
    const result = await run(process.execPath, [join(app, "node_modules/typescript/bin/tsc"), "-p", "."], app, 300_000)
    timings.push(`tsc ${result.seconds.toFixed(1)} s`)
    expect(result.stdout + result.stderr).toBe("")
    expect(result.code).toBe(0)
  }, 330_000)

  it.runIf(hasCli)("installs one command, named as the package so that `npx effect-mcp-transport` runs it", async () => {
    expect(manifest.bin).toEqual({ [manifest.name]: "dist/cli/main.js" })
    expect(readdirSync(join(app, "node_modules/.bin")).filter((name) => name.startsWith("effect-mcp-transport"))).toEqual([manifest.name])
    const result = ok(`npx ${manifest.name} --help`, await run("npx", ["--no", "--", manifest.name, "--help"], app, 60_000))
    expect(result.stdout).toMatch(/^USAGE$/m)
    expect(result.stdout).toContain("inspect")
  }, 90_000)
})
