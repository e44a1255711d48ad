/**
 * Ctrl-C during `effect-mcp-transport call`: SIGINT to the built binary while a long
 * tool runs. The CLI exits 130 after teardown; the server saw
 * `notifications/cancelled` for the call, and the stdio child is gone (the
 * HTTP session deleted).
 */
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { exampleHttpServer } from "./httpServer.ts"
import { exampleServer, isAlive, NODE, readEvents, startCli } from "./runCli.ts"
import { tempFiles } from "../fixtures/temp-files.ts"

const tempFile = tempFiles("effect-mcp-cli-")

const RECORDING = path.resolve(import.meta.dirname, "fixtures/recording-server.ts")
const TIMEOUT = 120_000

const httpEvents = tempFile("http-events.jsonl")
const http = exampleHttpServer({ events: httpEvents })

describe.concurrent("Ctrl-C during effect-mcp-transport call", () => {
  it("cancels the example server's countdown over stdio and stops the child", async () => {
    const events = tempFile("events.jsonl")
    const cli = startCli(["call", "countdown", "steps=1000", "intervalMs=50", ...exampleServer], {
      env: { EFFECT_MCP_EXAMPLE_EVENTS: events }
    })
    await cli.waitFor("progress: 1/1000")
    cli.child.kill("SIGINT")
    const r = await cli.exit
    expect(r.code).toBe(130)
    expect(r.stdout).toBe("")
    const seen = readEvents(events)
    const started = seen.find((e) => e.event === "started" && e.tool === "countdown")!
    expect(seen.filter((e) => e.requestId === started.requestId).map((e) => e.event)).toEqual(["started", "cancelled"])
    expect(seen.at(-1)?.event).toBe("stopped")
    expect(isAlive(started.pid as number)).toBe(false)
  }, TIMEOUT)

  it("sends notifications/cancelled for the call before closing the server's stdin", async () => {
    const record = tempFile("record.jsonl")
    const cli = startCli(["call", "wait", "--", NODE, RECORDING], { env: { RECORD_FILE: record } })
    await cli.waitFor("progress: 1 waiting")
    cli.child.kill("SIGINT")
    const r = await cli.exit
    expect(r.code).toBe(130)
    const seen = readEvents(record)
    const pid = seen[0]!.pid as number
    const callIndex = seen.findIndex((e) => (e.in as any)?.method === "tools/call")
    const call = seen[callIndex]!.in as { id: number }
    const cancelIndex = seen.findIndex((e) => (e.in as any)?.method === "notifications/cancelled")
    expect(cancelIndex).toBeGreaterThan(callIndex)
    expect((seen[cancelIndex]!.in as any).params.requestId).toBe(call.id)
    expect(seen.at(-1)).toEqual({ stdin: "end" })
    expect(isAlive(pid)).toBe(false)
  }, TIMEOUT)

  it("cancels over Streamable HTTP and deletes the session", async () => {
    // The handshake era, which has a session to delete (the example server serves both eras).
    const cli = startCli(["call", http.url, "countdown", "steps=1000", "intervalMs=50", "--protocol", "2025-11-25"])
    await cli.waitFor("progress: 1/1000")
    expect(await http.sessionIds()).toHaveLength(1)
    cli.child.kill("SIGINT")
    const r = await cli.exit
    expect(r.code).toBe(130)
    const seen = readEvents(httpEvents).filter((e) => e.tool === "countdown")
    expect(seen.map((e) => e.event)).toEqual(["started", "cancelled"])
    expect(await http.sessionIds()).toEqual([])
  }, TIMEOUT)
})
