/**
 * `effect-mcp-transport inspect`, run as the built binary against the example server:
 * over stdio (a command after --), Streamable HTTP and the legacy SSE
 * fallback (a URL).
 */
import { describe, expect, it } from "vitest"
import { exampleHttpServer } from "./httpServer.ts"
import { exampleServer, runCli } from "./runCli.ts"

const http = exampleHttpServer()

const TIMEOUT = 120_000

describe.concurrent("effect-mcp-transport inspect", () => {
  it("prints server info, protocol, transport, capabilities and the lists over stdio", async () => {
    const r = await runCli(["inspect", ...exampleServer])
    expect(r.stderr).toBe("")
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/^Server: +effect-mcp-example 0\.1\.0$/m)
    expect(r.stdout).toMatch(/^Protocol: +\d{4}-\d{2}-\d{2}$/m)
    expect(r.stdout).toMatch(/^Transport: +stdio$/m)
    expect(r.stdout).toMatch(/^Capabilities: .*tools/m)
    expect(r.stdout).toMatch(/^Tools \(3\)$/m)
    expect(r.stdout).toMatch(/^ +countdown +Counts down/m)
    expect(r.stdout).toMatch(/^Resources \(2\)$/m)
    expect(r.stdout).toMatch(/^ +example:\/\/readme/m)
    expect(r.stdout).toMatch(/^Prompts \(1\)$/m)
    expect(r.stdout).toMatch(/^ +greet +\(name\*\)/m)
  }, TIMEOUT)

  it("--json prints one JSON object", async () => {
    const r = await runCli(["inspect", "--json", ...exampleServer])
    expect(r.code).toBe(0)
    const report = JSON.parse(r.stdout)
    expect(report.server.name).toBe("effect-mcp-example")
    expect(report.transport).toBe("stdio")
    expect(report.protocolVersion).toMatch(/^\d{4}-\d{2}-\d{2}$/)
    expect(report.capabilities.tools).toBeDefined()
    expect(report.tools.map((t: { name: string }) => t.name).sort()).toEqual(["add", "countdown", "echo"])
    expect(report.tools.find((t: { name: string }) => t.name === "add").inputSchema.required).toEqual(["a", "b"])
    expect(report.resources.map((r: { uri: string }) => r.uri)).toContain("example://readme")
    expect(report.prompts.map((p: { name: string }) => p.name)).toEqual(["greet"])
  }, TIMEOUT)

  it("speaks Streamable HTTP to a URL, and closes its session", async () => {
    const r = await runCli(["inspect", http.url, "--json"])
    expect(r.stderr).toBe("")
    expect(r.code).toBe(0)
    const report = JSON.parse(r.stdout)
    expect(report.transport).toBe("streamable-http")
    expect(report.server.name).toBe("effect-mcp-example")
    expect(report.tools).toHaveLength(3)
  }, TIMEOUT)

  it("falls back to legacy HTTP+SSE when the URL refuses Streamable HTTP", async () => {
    const r = await runCli(["--json", "inspect", http.sseUrl])
    expect(r.code).toBe(0)
    const report = JSON.parse(r.stdout)
    expect(report.transport).toBe("sse")
    expect(report.tools.map((t: { name: string }) => t.name)).toContain("echo")
  }, TIMEOUT)
})

describe("effect-mcp-transport inspect over HTTP", () => {
  it("leaves no session behind", async () => {
    // The handshake era opens a session (the example server serves both eras).
    await runCli(["inspect", http.url, "--protocol", "2025-11-25"])
    // The CLI has exited: its DELETE was answered before it did.
    expect(await http.sessionIds()).toEqual([])
  }, TIMEOUT)
})
