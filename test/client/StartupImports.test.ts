/**
 * What a stdio client loads at start-up decides its cold start (BENCHMARKS.md,
 * cold start): `effect/Schema` and the Node terminal/stdio services cost
 * ~100 ms each and the stdio transport needs neither.
 */
import { describe, expect, it } from "vitest"
import { loadedBy } from "../fixtures/loadedBy.ts"

describe("start-up imports", () => {
  it("the stdio client transport with NodeSpawner loads neither effect/Schema nor the terminal and stdio services", () => {
    const loaded = loadedBy("./src/client/StdioClientTransport.ts", "./src/client/NodeSpawner.ts")
    expect(loaded.some((url) => url.endsWith("/src/client/StdioClientTransport.ts"))).toBe(true)
    expect(loaded.filter((url) => /\/effect\/dist\/Schema\.js$|NodeTerminal|NodeStdio|NodeServices/.test(url))).toEqual([])
  }, 30_000)

  it("a one-shot call loads neither effect/ai nor McpClient: a serverless function pays for neither", () => {
    // effect/http itself loads effect/Schema; the MCP schemas and the protocol layer are what a one-shot call avoids.
    const loaded = loadedBy("./src/client/OneShot.ts")
    expect(loaded.some((url) => url.endsWith("/src/client/OneShot.ts"))).toBe(true)
    expect(loaded.filter((url) => /\/effect\/dist\/ai\/|\/src\/client\/McpClient\.ts$/.test(url))).toEqual([])
  }, 30_000)

  it("McpManager loads the OAuth client only when an entry asks for it", () => {
    const loaded = loadedBy("./src/client/McpManager.ts")
    expect(loaded.some((url) => url.endsWith("/src/client/McpManager.ts"))).toBe(true)
    expect(loaded.filter((url) => /\/src\/client\/auth\/(?!WwwAuthenticate)|EntryAuth|JwtSign/.test(url))).toEqual([])
  })

  it("McpServer loads no server transport: its layers load the one they serve on when built", () => {
    const loaded = loadedBy("./src/server/McpServer.ts")
    expect(loaded.some((url) => url.endsWith("/src/server/McpServer.ts"))).toBe(true)
    expect(loaded.filter((url) => /\/src\/server\/(Http|Stdio)ServerTransport\.ts$|NodeHttpServer/.test(url))).toEqual([])
  }, 30_000)

  it("the JSON-RPC module does not load effect/Schema; its Schemas live in JsonRpcSchema", () => {
    expect(loadedBy("./src/JsonRpc.ts").filter((url) => url.endsWith("/effect/dist/Schema.js"))).toEqual([])
    expect(loadedBy("./src/JsonRpcSchema.ts").filter((url) => url.endsWith("/effect/dist/Schema.js"))).toHaveLength(1)
  }, 30_000)

  it("a stdio server on McpServer does not load effect/ai/McpSchema until it asks a client for something", () => {
    const loaded = loadedBy("./src/server/McpServer.ts", "./src/server/StdioServerTransport.ts")
    expect(loaded.some((url) => url.endsWith("/src/server/McpServer.ts"))).toBe(true)
    expect(loaded.filter((url) => url.includes("/effect/dist/ai/"))).toEqual([])
  }, 30_000)

  it("the HTTP transports load effect's modules by subpath, not the http, net and encoding indexes", () => {
    const loaded = loadedBy(
      "./src/server/HttpServerTransport.ts",
      "./src/client/StreamableHttpClientTransport.ts",
      "./src/client/SseClientTransport.ts"
    )
    expect(loaded.some((url) => url.endsWith("/effect/dist/encoding/Sse.js"))).toBe(true)
    expect(loaded.filter((url) => /\/effect\/dist\/(http|net|encoding)\/index\.js$|\/encoding\/(Yaml|Zip|Tar)\.js$/.test(url))).toEqual([])
  }, 30_000)

  it("servers, clients and the bridge load no exporter: tracing costs nothing until a Telemetry layer is built", () => {
    const loaded = loadedBy(
      "./src/server/McpServer.ts",
      "./src/server/StdioServerTransport.ts",
      "./src/client/McpClient.ts",
      "./src/bridge/Bridge.ts",
      "./src/Telemetry.ts"
    )
    expect(loaded.some((url) => url.endsWith("/src/Telemetry.ts"))).toBe(true)
    expect(loaded.filter((url) => /\/effect\/dist\/observability\//.test(url))).toEqual([])
  }, 30_000)

  it("McpClient loads effect/Schema and effect/ai/McpSchema when a client is made, not when it is imported", () => {
    const loaded = loadedBy("./src/client/McpClient.ts", "./src/client/StdioClientTransport.ts", "./src/client/NodeSpawner.ts")
    expect(loaded.some((url) => url.endsWith("/src/client/McpClient.ts"))).toBe(true)
    expect(loaded.filter((url) => /\/effect\/dist\/Schema\.js$|\/effect\/dist\/ai\//.test(url))).toEqual([])
  }, 30_000)

  it("McpClient loads its protocol layer when a client is made, after a stdio transport has spawned its server", () => {
    const loaded = loadedBy("./src/client/McpClient.ts", "./src/client/StdioClientTransport.ts", "./src/client/NodeSpawner.ts")
    expect(loaded.some((url) => url.endsWith("/src/client/McpClient.ts"))).toBe(true)
    expect(
      loaded.filter((url) =>
        /\/src\/client\/internal\/(ClientBuild|Handshake|ClientMethods|McpCallEngine|NotificationHub)\.ts$|\/src\/observability\/Metrics\.ts$/
          .test(url)
      )
    ).toEqual([])
  }, 30_000)
})
