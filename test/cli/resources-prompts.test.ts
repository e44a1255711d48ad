/**
 * `read`, `prompt`, `complete` and `list`, run as the built binary against the
 * example server (stdio and Streamable HTTP, both eras), the reference
 * `@modelcontextprotocol/server-everything` (stdio, handshake era) and the SDK v2
 * server (`@modelcontextprotocol/server` 2.4, stdio, both eras).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { exampleHttpServer } from "./httpServer.ts"
import { exampleServer, NODE, runCli } from "./runCli.ts"
import { tempFiles } from "../fixtures/temp-files.ts"

const tempFile = tempFiles("effect-mcp-cli-")

const ROOT = path.resolve(import.meta.dirname, "../..")
const everything = ["--", NODE, path.join(ROOT, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "stdio"]
const sdk2 = ["--", NODE, path.join(ROOT, "test/fixtures/peers/sdk2-server.ts"), "--stdio"]

const http = exampleHttpServer()

const TIMEOUT = 120_000

describe.concurrent("effect-mcp-transport read", () => {
  it("prints a text resource of the example server over HTTP", async () => {
    const r = await runCli(["read", http.url, "example://readme"])
    expect(r.stderr).toBe("")
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/^# effect-mcp-transport example server$/m)
  }, TIMEOUT)

  it("--json prints the raw result, in the handshake era too", async () => {
    const r = await runCli(["read", "--json", "--protocol", "2025-11-25", "example://server-info", ...exampleServer])
    expect(r.code).toBe(0)
    const result = JSON.parse(r.stdout)
    expect(result.contents[0].uri).toBe("example://server-info")
    expect(JSON.parse(result.contents[0].text).name).toBe("effect-mcp-example")
  }, TIMEOUT)

  it("summarises a blob of server-everything and prints a text one", async () => {
    const blob = await runCli(["read", "demo://resource/dynamic/blob/1", ...everything])
    expect(blob.code).toBe(0)
    expect(blob.stdout).toMatch(/^\[blob demo:\/\/resource\/dynamic\/blob\/1 [^,]*, \d+ bytes\]$/m)
    const text = await runCli(["read", "demo://resource/dynamic/text/2", ...everything])
    expect(text.code).toBe(0)
    expect(text.stdout).toContain("Resource 2")
  }, TIMEOUT)

  it("reads the SDK v2 server's resource", async () => {
    const r = await runCli(["read", "test://hello", ...sdk2])
    expect(r.code).toBe(0)
    expect(r.stdout).toBe("Hello from the peer.\n")
  }, TIMEOUT)

  it("an unknown resource is a JSON-RPC error (exit 4)", async () => {
    const r = await runCli(["read", http.url, "example://missing"])
    expect(r.code).toBe(4)
    expect(r.stderr).toMatch(/^effect-mcp-transport: MCP error -32\d+: Resource not found: example:\/\/missing$/m)
  }, TIMEOUT)

  it("no URI, or two, is a usage error (exit 2)", async () => {
    const none = await runCli(["read", http.url])
    expect(none.code).toBe(2)
    expect(none.stderr).toContain("expected one resource URI")
    const two = await runCli(["read", "a://1", "b://2", ...exampleServer])
    expect(two.code).toBe(2)
  }, TIMEOUT)

  it("--output writes the result to a file and nothing to stdout", async () => {
    const file = tempFile("readme.md")
    try {
      const r = await runCli(["read", http.url, "example://readme", "--output", file])
      expect(r.code).toBe(0)
      expect(r.stdout).toBe("")
      expect(fs.readFileSync(file, "utf8")).toMatch(/^# effect-mcp-transport example server$/m)
      const bad = await runCli(["read", http.url, "example://readme", "-o", path.join(file, "nope", "x.md")])
      expect(bad.code).toBe(2)
      expect(bad.stderr).toMatch(/--output .*: the directory .* does not exist/)
    } finally {
      fs.rmSync(path.dirname(file), { recursive: true, force: true })
    }
  }, TIMEOUT)
})

describe.concurrent("effect-mcp-transport prompt", () => {
  it("prints the example server's messages over HTTP", async () => {
    const r = await runCli(["prompt", http.url, "greet", "name=Ada"])
    expect(r.stderr).toBe("")
    expect(r.code).toBe(0)
    expect(r.stdout).toContain("user: Please greet Ada")
  }, TIMEOUT)

  it("takes values as strings, and --args as a JSON object of strings (server-everything)", async () => {
    const r = await runCli(["prompt", "--json", "args-prompt", "city=1", "--args", "{\"state\":\"CA\"}", ...everything])
    expect(r.code).toBe(0)
    const result = JSON.parse(r.stdout)
    expect(JSON.stringify(result.messages)).toContain("1, CA")
  }, TIMEOUT)

  it("gets the SDK v2 server's prompt in both eras", async () => {
    for (const protocol of ["2026-07-28", "2025-11-25"]) {
      const r = await runCli(["prompt", "--protocol", protocol, "greet", "name=Ada", ...sdk2])
      expect(r.code).toBe(0)
      expect(r.stdout).toBe("user: Please greet Ada.\n")
    }
  }, TIMEOUT)

  it("a malformed pair or a non-string --args value is a usage error (exit 2)", async () => {
    const pair = await runCli(["prompt", http.url, "greet", "name"])
    expect(pair.code).toBe(2)
    expect(pair.stderr).toContain("expected key=value after the prompt name")
    const json = await runCli(["prompt", http.url, "greet", "--args", "{\"name\":1}"])
    expect(json.code).toBe(2)
    expect(json.stderr).toContain("prompt arguments are strings")
  }, TIMEOUT)

  it("an unknown prompt is a JSON-RPC error (exit 4)", async () => {
    const r = await runCli(["prompt", http.url, "nope"])
    expect(r.code).toBe(4)
  }, TIMEOUT)
})

describe.concurrent("effect-mcp-transport complete", () => {
  it("completes a prompt argument of the example server", async () => {
    const r = await runCli(["complete", http.url, "greet", "name=A"])
    expect(r.code).toBe(0)
    expect(r.stdout.split("\n").filter((l) => l !== "").every((l) => l.startsWith("A"))).toBe(true)
    expect(r.stdout).toContain("Ada")
  }, TIMEOUT)

  it("passes the arguments already given as context (server-everything)", async () => {
    const r = await runCli(["complete", "completable-prompt", "name=", "department=Sales", ...everything])
    expect(r.code).toBe(0)
    expect(r.stdout).toBe("David\nEve\nFrank\n")
    const json = await runCli(["complete", "--json", "completable-prompt", "department=Eng", ...everything])
    expect(JSON.parse(json.stdout).completion.values).toEqual(["Engineering"])
  }, TIMEOUT)

  it("completes a resource template's argument (server-everything)", async () => {
    const r = await runCli(["complete", "--json", "demo://resource/dynamic/text/{resourceId}", "resourceId=", ...everything])
    expect(r.code).toBe(0)
    expect(Array.isArray(JSON.parse(r.stdout).completion.values)).toBe(true)
  }, TIMEOUT)

  it("no argument, or one without =, is a usage error (exit 2)", async () => {
    expect((await runCli(["complete", http.url, "greet"])).code).toBe(2)
    const r = await runCli(["complete", http.url, "greet", "name"])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain("<argument>=[partial]")
  }, TIMEOUT)
})

describe.concurrent("effect-mcp-transport list", () => {
  it("lists tools, resources and prompts of the example server, one a line", async () => {
    const tools = await runCli(["list", http.url, "tools"])
    expect(tools.code).toBe(0)
    expect(tools.stdout).toMatch(/^echo +Returns the text it was given\.$/m)
    expect(tools.stdout.trim().split("\n")).toHaveLength(3)
    const resources = await runCli(["list", "resources", ...exampleServer])
    expect(resources.stdout).toMatch(/^example:\/\/readme /m)
    const prompts = await runCli(["list", "--json", http.url, "prompts"])
    expect(JSON.parse(prompts.stdout).prompts.map((p: { name: string }) => p.name)).toEqual(["greet"])
  }, TIMEOUT)

  it("lists server-everything's resource templates under inspect's JSON key", async () => {
    const r = await runCli(["list", "--json", "templates", ...everything])
    expect(r.code).toBe(0)
    const templates = JSON.parse(r.stdout).resourceTemplates.map((t: { uriTemplate: string }) => t.uriTemplate)
    expect(templates).toContain("demo://resource/dynamic/text/{resourceId}")
  }, TIMEOUT)

  it("lists the SDK v2 server's tools", async () => {
    const r = await runCli(["list", "tools", ...sdk2])
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/^echo +Echoes text$/m)
  }, TIMEOUT)

  it("an unknown kind is a usage error (exit 2)", async () => {
    const r = await runCli(["list", http.url, "widgets"])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain("expected what to list: tools, resources, templates, prompts")
  }, TIMEOUT)
})
