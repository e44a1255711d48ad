/**
 * `effect-mcp-transport call`, run as the built binary: arguments as key=value and
 * --args, result printing, progress on stderr, and the exit codes for a
 * tool error (1), a JSON-RPC error (4) and a timeout (5).
 */
import { execFileSync } from "node:child_process"
import * as path from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import { ensureBuilt, exampleServer, MAIN, NODE, readEvents, runCli } from "./runCli.ts"
import { tempFiles } from "../fixtures/temp-files.ts"

const tempFile = tempFiles("effect-mcp-cli-")

const RECORDING = path.resolve(import.meta.dirname, "fixtures/recording-server.ts")
const TIMEOUT = 120_000

beforeAll(ensureBuilt)

const stderrLines = (stderr: string) => stderr.split("\n").filter((l) => l.trim() !== "")

/** util-linux `script` gives the CLI a terminal, to see the progress bar a user sees. */
const hasScript = (() => {
  try {
    execFileSync("script", ["--version"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
})()
const shellQuote = (s: string) => `'${s.replace(/'/g, "'\\''")}'`

describe.concurrent("effect-mcp-transport call", () => {
  it("takes key=value arguments, JSON values where they parse, and prints text and structuredContent", async () => {
    const r = await runCli(["call", "add", "a=1", "b=2.5", ...exampleServer])
    expect(r.stderr).toBe("")
    expect(r.code).toBe(0)
    const [text, ...json] = r.stdout.trimEnd().split("\n")
    expect(text).toBe("3.5")
    expect(JSON.parse(json.join("\n"))).toEqual({ sum: 3.5 })
  }, TIMEOUT)

  it("takes --args JSON (key=value laid over it) and --json prints the raw result", async () => {
    const r = await runCli(["call", "echo", "--args", '{"text":"from --args","x":1}', "text=hello world", "--json", ...exampleServer])
    expect(r.code).toBe(0)
    // The stateless era's raw result (the example server serves it; `call` finds it by default) names the server.
    expect(JSON.parse(r.stdout)).toEqual({
      content: [{ type: "text", text: "hello world" }],
      _meta: { "io.modelcontextprotocol/serverInfo": { name: "effect-mcp-example", title: "effect-mcp-transport example server", version: "0.1.0" } }
    })
  }, TIMEOUT)

  it("keeps a value that is not JSON as a string", async () => {
    const r = await runCli(["call", "echo", "text=[not json", ...exampleServer])
    expect(r.code).toBe(0)
    expect(r.stdout).toBe("[not json\n")
  }, TIMEOUT)

  it("shows progress on stderr (one line per update when stderr is not a terminal)", async () => {
    const events = tempFile("events.jsonl")
    const r = await runCli(["call", "countdown", "steps=3", "intervalMs=1", ...exampleServer], {
      env: { EFFECT_MCP_EXAMPLE_EVENTS: events }
    })
    expect(r.code).toBe(0)
    expect(r.stdout).toBe("countdown finished after 3 steps\n")
    expect(stderrLines(r.stderr)).toEqual([
      "progress: 1/3 step 1 of 3, 2 to go (33%)",
      "progress: 2/3 step 2 of 3, 1 to go (67%)",
      "progress: 3/3 step 3 of 3, 0 to go (100%)"
    ])
    expect(readEvents(events).filter((e) => e.tool === "countdown").map((e) => e.event)).toEqual(["started", "completed"])
  }, TIMEOUT)

  it("exits 1 when the tool answers isError: true, after printing the result", async () => {
    const r = await runCli(["call", "add", "a=x", "b=1", ...exampleServer])
    expect(r.code).toBe(1)
    expect(r.stdout).toMatch(/^Invalid arguments/)
    expect(stderrLines(r.stderr)).toEqual(["effect-mcp-transport: tool add reported an error (isError: true)"])
  }, TIMEOUT)

  it("exits 4 with one line when the server answers a JSON-RPC error (unknown tool)", async () => {
    const r = await runCli(["call", "no-such-tool", ...exampleServer])
    expect(r.code).toBe(4)
    expect(r.stdout).toBe("")
    const lines = stderrLines(r.stderr)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^effect-mcp-transport: MCP error -32602: .*no-such-tool/)
  }, TIMEOUT)

  it("exits 5 with one line when the call times out, and tells the server", async () => {
    const record = tempFile("record.jsonl")
    const r = await runCli(["call", "wait", "--timeout", "300ms", "--", NODE, RECORDING], {
      env: { RECORD_FILE: record }
    })
    expect(r.code).toBe(5)
    const lines = stderrLines(r.stderr).filter((l) => !l.startsWith("progress:"))
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^effect-mcp-transport: .*timeout after 300ms \(tools\/call/i)
    const seen = readEvents(record)
    const call = seen.find((e) => (e.in as any)?.method === "tools/call")?.in as { id: number }
    expect(seen.some((e) => (e.in as any)?.method === "notifications/cancelled" && (e.in as any).params.requestId === call.id))
      .toBe(true)
  }, TIMEOUT)

  it("exits 2 on a malformed key=value or --args", async () => {
    const [pair, args] = await Promise.all([
      runCli(["call", "echo", "text", ...exampleServer]),
      runCli(["call", "echo", "--args", "[1,2]", ...exampleServer])
    ])
    expect(pair.code).toBe(2)
    expect(stderrLines(pair.stderr)).toEqual(['effect-mcp-transport: expected key=value after the tool name, got "text"'])
    expect(args.code).toBe(2)
    expect(stderrLines(args.stderr)).toEqual(["effect-mcp-transport: --args must be a JSON object"])
  }, TIMEOUT)

  it.skipIf(!hasScript)("draws a progress bar in place when stderr is a terminal, and clears it", async () => {
    const line = [NODE, MAIN, "call", "countdown", "steps=4", "intervalMs=1", ...exampleServer].map(shellQuote).join(" ")
    const r = await runCli([], { command: ["script", "-qec", line, "/dev/null"] })
    expect(r.code).toBe(0)
    expect(r.stdout).toContain("\r\x1b[2K[######------------------]  25% 1/4 step 1 of 4")
    expect(r.stdout).toContain("\r\x1b[2K[########################] 100% 4/4 step 4 of 4")
    // Cleared before the result, which is printed on a line of its own.
    expect(r.stdout).toMatch(/\r\x1b\[2Kcountdown finished after 4 steps\r?\n/)
    expect(r.stdout).not.toContain("progress:")
  }, TIMEOUT)
})
