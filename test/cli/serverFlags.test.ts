/**
 * `-e` / `--cwd` for a spawned server and `--config FILE --server NAME`,
 * run as the built binary: the child sees its environment and directory,
 * and a configuration entry (stdio, or HTTP with headers) is reached as if
 * given on the command line.
 */
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type RunningHttpServer, startHttpServer } from "./httpServer.ts"
import { ensureBuilt, NODE, readEvents, runCli } from "./runCli.ts"
import { tempFiles } from "../fixtures/temp-files.ts"

const tempFile = tempFiles("effect-mcp-cli-")

const TIMEOUT = 120_000
const RECORDING = path.resolve(import.meta.dirname, "fixtures/recording-server.ts")

let example: RunningHttpServer
/** A proxy in front of the example server that remembers the headers of each request. */
let proxy: http.Server
let proxyUrl = ""
const seen: Array<http.IncomingHttpHeaders> = []

beforeAll(async () => {
  ensureBuilt()
  example = await startHttpServer()
  const target = new URL(example.url)
  proxy = http.createServer((req, res) => {
    seen.push(req.headers)
    const upstream = http.request(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
      }
    )
    upstream.on("error", () => res.destroy())
    req.pipe(upstream)
  })
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve))
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/mcp`
})

afterAll(async () => {
  proxy.closeAllConnections()
  await new Promise<void>((resolve) => proxy.close(() => resolve()))
  await example.close()
})

const writeConfig = (document: unknown): string => {
  const file = tempFile("mcp.json")
  fs.writeFileSync(file, JSON.stringify(document))
  return file
}

describe("effect-mcp-transport -e / --cwd", () => {
  it("the spawned server gets the variables and runs in the directory", async () => {
    const dir = path.dirname(tempFile("x"))
    // A relative RECORD_FILE lands in the child's working directory: both flags at once.
    const r = await runCli(["ping", "-c", "1", "-e", "RECORD_FILE=record.jsonl", "--cwd", dir, "--", NODE, RECORDING])
    expect(r.code, r.stderr).toBe(0)
    expect(readEvents(path.join(dir, "record.jsonl")).some((e) => typeof e.pid === "number")).toBe(true)
  }, TIMEOUT)

  it("are refused for a URL server, and a pair without a key is a usage error (exit 2)", async () => {
    const url = await runCli(["ping", "http://127.0.0.1:9/mcp", "-e", "A=1"])
    expect(url.code).toBe(2)
    expect(url.stderr).toContain("-e and --cwd apply to command servers only")
    const bad = await runCli(["ping", "-e", "=1", "--", NODE, RECORDING])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain("-e expects KEY=VALUE")
  }, TIMEOUT)
})

describe("effect-mcp-transport --config --server", () => {
  it("runs a stdio entry with its env and cwd", async () => {
    const dir = path.dirname(tempFile("x"))
    const config = writeConfig({
      mcpServers: { rec: { command: NODE, args: [RECORDING], env: { RECORD_FILE: "entry.jsonl" }, cwd: dir } }
    })
    const r = await runCli(["ping", "-c", "1", "--config", config, "--server", "rec"])
    expect(r.code, r.stderr).toBe(0)
    expect(readEvents(path.join(dir, "entry.jsonl")).length).toBeGreaterThan(0)
  }, TIMEOUT)

  it("reaches an HTTP entry with its headers, and -H adds to them", async () => {
    const config = writeConfig({
      mcpServers: { remote: { type: "http", url: proxyUrl, headers: { "X-Api-Key": "entry-key" } } }
    })
    seen.length = 0
    const r = await runCli(["call", "add", "a=1", "b=2", "--config", config, "--server", "remote", "-H", "X-Extra: more"])
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toContain("3")
    expect(seen.length).toBeGreaterThan(0)
    for (const headers of seen) {
      expect(headers["x-api-key"]).toBe("entry-key")
      expect(headers["x-extra"]).toBe("more")
    }
  }, TIMEOUT)

  it("an unknown name, an invalid entry, a malformed or missing file: one line naming the problem, exit 2", async () => {
    const config = writeConfig({
      mcpServers: { one: { command: "node" }, broken: { type: "http", url: "not a url" } }
    })
    const unknown = await runCli(["ping", "--config", config, "--server", "nope"])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain(`no enabled server named "nope" (it has one)`)
    const invalid = await runCli(["ping", "--config", config, "--server", "broken"])
    expect(invalid.code).toBe(2)
    expect(invalid.stderr).toContain(`Invalid MCP configuration for server "broken"`)
    const malformed = tempFile("mcp.json")
    fs.writeFileSync(malformed, "{ not json")
    const notJson = await runCli(["ping", "--config", malformed, "--server", "one"])
    expect(notJson.code).toBe(2)
    expect(notJson.stderr).toContain("not JSON")
    const missing = await runCli(["ping", "--config", tempFile("absent.json"), "--server", "one"])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain("cannot read it")
    const noServer = await runCli(["ping", "--config", config])
    expect(noServer.code).toBe(2)
    expect(noServer.stderr).toContain("--config needs --server NAME")
    const both = await runCli(["ping", "http://127.0.0.1:9/mcp", "--config", config, "--server", "one"])
    expect(both.code).toBe(2)
  }, TIMEOUT)
})
