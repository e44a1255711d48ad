/**
 * `--header` and `--bearer`, run as the built binary against a loopback
 * server that records what it is sent: the headers reach the server on
 * every request, and the token never shows in the CLI's output.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ensureBuilt, exampleServer, runCli } from "./runCli.ts"

const TIMEOUT = 120_000
const seen: Array<http.IncomingHttpHeaders> = []
let server: http.Server
let url = ""

beforeAll(async () => {
  ensureBuilt()
  // Refuses everything, as a server behind a gateway would with the wrong key: only the headers matter here.
  server = http.createServer((req, res) => {
    seen.push(req.headers)
    req.resume()
    res.writeHead(401, { "content-type": "application/json" })
    res.end(JSON.stringify({ error: "unauthorized" }))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`
})

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

describe("effect-mcp-transport --header / --bearer", () => {
  it("sends every --header and the bearer token on each request, and never prints the token", async () => {
    const r = await runCli([
      "ping",
      url,
      "-c",
      "1",
      "--header",
      "X-Api-Key: key-123",
      "--header",
      "X-Tenant:  blue ",
      "--bearer",
      "secret-token-xyz",
      "--connect-timeout",
      "10s"
    ])
    expect(r.code).not.toBe(0)
    expect(seen.length).toBeGreaterThan(0)
    for (const headers of seen) {
      expect(headers["x-api-key"]).toBe("key-123")
      expect(headers["x-tenant"]).toBe("blue")
      expect(headers.authorization).toBe("Bearer secret-token-xyz")
    }
    expect(r.stdout + r.stderr).not.toContain("secret-token-xyz")
  }, TIMEOUT)

  it("a header without a name, or headers for a stdio server, are usage errors (exit 2)", async () => {
    const bad = await runCli(["ping", url, "--header", "no colon here"])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain("--header expects 'Name: value'")
    expect(bad.stderr).not.toContain("no colon here")
    const stdio = await runCli(["ping", "--bearer", "t", ...exampleServer])
    expect(stdio.code).toBe(2)
    expect(stdio.stderr).toContain("URL servers only")
  }, TIMEOUT)
})
