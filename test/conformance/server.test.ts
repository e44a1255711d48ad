/**
 * The official MCP conformance suite (server side) against our example
 * server, through the same runner as `npm run conformance`, so a regression in
 * the server transport or lifecycle fails CI. The runner's verdict logic
 * (summary parsing, baseline) is checked on fixed text as well, so a failing
 * scenario cannot be misread as a pass.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Option, Stream, SubscriptionRef } from "effect"
import * as EverythingServer from "../../conformance/everything-server.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"
import * as HttpServerTransport from "../../src/server/HttpServerTransport.ts"
import {
  clientAuthExtensions,
  fromChecks,
  judge,
  parseSingle,
  parseSummary,
  readBaseline,
  readResults,
  serverScenarios
} from "../../conformance/run-server.ts"
import { authExtensions, inScope, parseRequirements } from "../../conformance/requirements.ts"
import { runSuite } from "./runSuite.ts"

describe("conformance runner: verdicts", () => {
  const output = [
    "=== SUMMARY ===",
    "✓ server-initialize: 1 passed, 0 failed",
    "✗ tools-call-image: 0 passed, 1 failed",
    "✗ tools-call-audio: 2 passed, 0 failed",
    "",
    "Total: 3 passed, 1 failed"
  ].join("\n")

  it("reads every scenario line and counts a ✗ as a failure even with 0 failed checks", () => {
    expect(parseSummary(output)).toEqual([
      { name: "server-initialize", passed: 1, failed: 0 },
      { name: "tools-call-image", passed: 0, failed: 1 },
      { name: "tools-call-audio", passed: 2, failed: 1 }
    ])
  })

  it("separates expected failures, unexpected ones and stale baseline entries", () => {
    const verdict = judge(parseSummary(output), { "tools-call-image": "known", "ping": "fixed since" })
    expect(verdict.passed).toEqual(["server-initialize"])
    expect(verdict.unexpected).toEqual(["tools-call-audio"])
    expect(verdict.stale).toEqual(["ping"])
  })

  it("treats a single-scenario run without a result line, or a non-zero exit, as failed", () => {
    expect(parseSingle("initialize", "Passed: 2/2, 0 failed, 0 warnings", 0)).toEqual({ name: "initialize", passed: 2, failed: 0 })
    expect(parseSingle("initialize", "Passed: 2/2, 0 failed, 0 warnings", 1).failed).toBe(1)
    expect(parseSingle("sse-retry", "Error: spawn failed", 1).failed).toBe(1)
  })

  it("counts warnings and scenarios without a successful check as failures, except load-dependent timing", () => {
    expect(fromChecks("a", [{ id: "x", status: "SUCCESS" }, { id: "y", status: "INFO" }])).toMatchObject({ passed: 1, failed: 0 })
    expect(fromChecks("b", [{ id: "tool", status: "WARNING", errorMessage: "no tool" }])).toMatchObject({
      failed: 1,
      problems: ["tool: WARNING no tool"]
    })
    expect(fromChecks("c", [{ id: "content-type", status: "INFO" }])).toMatchObject({ failed: 1, problems: ["no successful check"] })
    expect(fromChecks("d", [{ id: "z", status: "SUCCESS" }, { id: "client-sse-retry-timing", status: "WARNING" }]).failed).toBe(0)
    expect(fromChecks("e", [{ id: "client-sse-retry-timing", status: "FAILURE" }]).failed).toBe(1)
  })

  it("finds saved checks of server scenarios (server-<name>-<time>) and client scenarios (<name>-<time>, auth/<name>-<time>)", () => {
    const dir = mkdtempSync(join(tmpdir(), "conformance-results-"))
    try {
      const entries = [
        "server-ping-2026-12-01T17-21-19-694Z",
        "tools_call-2026-12-01T17-52-40-577Z",
        "auth/client-credentials-jwt-2026-12-01T23-55-02-189Z"
      ]
      for (const entry of entries) {
        mkdirSync(join(dir, entry), { recursive: true })
        writeFileSync(join(dir, entry, "checks.json"), JSON.stringify([{ id: "x", status: "SUCCESS" }]))
      }
      expect(readResults(dir).map((r) => r.name).sort()).toEqual(["auth/client-credentials-jwt", "ping", "tools_call"])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("the committed baseline expects no 2025-11-25 failure, no 2026-07-28 server failure, no auth extension failure", () => {
    const baseline = readBaseline()
    expect(baseline["2025-11-25"]).toEqual({ server: {}, client: {} })
    expect(baseline["2026-07-28"].server).toEqual({})
    expect(baseline.extensions.client).toEqual({})
  })
})

describe("conformance runner: requirement lists", () => {
  const text = [
    "# comment",
    "server:",
    "  - server-stateless",
    "  - tools-list",
    "",
    "client:",
    "  - tools_call",
    "  - auth/metadata-default",
    "",
    "not_scored:",
    "  - scenario: auth/dpop",
    "    leg: client",
    "    reason: extension",
    "  - scenario: json-schema-2020-12-preservation",
    "    leg: client",
    "    reason: added-after-release",
    "  - scenario: tasks-lifecycle",
    "    leg: server",
    "    reason: extension",
    "    note: >-",
    "      pending against the reference fixture",
    "  - scenario: http-header-validation",
    "    leg: server",
    "    reason: pending"
  ].join("\n")

  it("reads the scored lists and the unscored entries with their leg and reason", () => {
    const list = parseRequirements("2026-07-28", text)
    expect(list.server).toEqual(["server-stateless", "tools-list"])
    expect(list.client).toEqual(["tools_call", "auth/metadata-default"])
    expect(list.notScored).toEqual([
      { scenario: "auth/dpop", leg: "client", reason: "extension" },
      { scenario: "json-schema-2020-12-preservation", leg: "client", reason: "added-after-release" },
      { scenario: "tasks-lifecycle", leg: "server", reason: "extension" },
      { scenario: "http-header-validation", leg: "server", reason: "pending" }
    ])
  })

  it("judges scored and pending scenarios (the client's OAuth ones included) and the server's tasks scenarios, no other extension", () => {
    const list = parseRequirements("2026-07-28", text)
    expect(inScope(list, "server")).toEqual(["server-stateless", "tools-list", "tasks-lifecycle", "http-header-validation"])
    expect(inScope(list, "client")).toEqual(["tools_call", "auth/metadata-default", "json-schema-2020-12-preservation"])
  })

  it("groups the client's auth extension scenarios of every list, once each", () => {
    const list = parseRequirements("2026-07-28", text)
    expect(authExtensions([list, list])).toEqual(["auth/dpop"])
    expect(clientAuthExtensions()).toEqual(expect.arrayContaining(["auth/dpop", "auth/dpop-nonce", "auth/wif-jwt-bearer"]))
  })

  it("finds both installed lists", () => {
    expect(serverScenarios("2025-11-25")).toContain("server-initialize")
    expect(serverScenarios("2026-07-28")).toContain("server-stateless")
    expect(serverScenarios("2026-07-28")).not.toContain("server-initialize")
    expect(serverScenarios("2026-07-28")).toContain("tasks-mrtr-composition")
    expect(serverScenarios("2026-07-28")).not.toContain("tasks-status-notifications")
  })
})

describe("conformance: server suite", () => {
  it.live("every scenario of the 2025-11-25 and the 2026-07-28 list passes against conformance/everything-server.ts", () =>
    Effect.gen(function*() {
      const run = yield* runSuite("server")
      const judged2025 = serverScenarios("2025-11-25").length
      const judged2026 = serverScenarios("2026-07-28").length
      expect(run).toEqual({
        code: 0,
        lines: {
          "2025-11-25": `server 2025-11-25: ${judged2025} passed, 0 failed`,
          "2026-07-28": `server 2026-07-28: ${judged2026} passed, 0 failed`
        },
        output: ""
      })
      // 2025-11-25: the 30 scenarios the list scores plus the 3 it runs unscored (pending, added after its release).
      expect(judged2025).toBeGreaterThanOrEqual(33)
      // 2026-07-28: the 37 it scores, the 3 pending ones and 9 of the tasks extension (tasks-status-notifications only reports SKIPPED).
      expect(judged2026).toBeGreaterThanOrEqual(49)
    }), { timeout: 180_000 })
})

describe("everything-server: resource subscriptions", () => {
  it.live("a subscribed session hears of changes to test://watched-resource on its standalone stream", () =>
    Effect.scoped(Effect.gen(function*() {
      const services = yield* Layer.build(EverythingServer.layer({ port: 0, watchedInterval: "50 millis" }))
      const url = Option.getOrThrow(Context.get(services, HttpServerTransport.HttpServerTransport).url)
      // A session of the handshake era: the example server tells subscribed sessions, not listen streams.
      const client = yield* McpClient.connect(StreamableHttpClientTransport.make({ url, listen: true }), { protocol: "2025-11-25" })
      // The change repeats, so a subscriber that starts listening a little late still hears one.
      const heard = yield* Effect.forkChild(Stream.runHead(client.resourceUpdated))
      yield* client.subscribeResource("test://watched-resource")
      const update = yield* Fiber.join(heard)
      expect(Option.map(update, (u) => u.uri)).toEqual(Option.some("test://watched-resource"))
      const read = yield* client.readResource("test://watched-resource")
      expect(read.contents[0]).toMatchObject({ uri: "test://watched-resource", text: expect.stringMatching(/^Watched resource content, version \d+\.$/) })
    })).pipe(Effect.provide(Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici))), { timeout: 30_000 })
})

describe("everything-server: the stateless era", () => {
  /** The example server on a free loopback port, for the length of the test. */
  const serverUrl = Effect.map(
    Layer.build(EverythingServer.layer({ port: 0 })),
    (services) => Option.getOrThrow(Context.get(services, HttpServerTransport.HttpServerTransport).url)
  )
  const provided = Effect.provide(Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici))

  it.live("test_trigger_tool_change changes tools/list and is heard on a subscriptions/listen stream", () =>
    Effect.scoped(Effect.gen(function*() {
        const url = yield* serverUrl
        const client = yield* McpClient.connect(StreamableHttpClientTransport.make({ url }), { protocol: "2026-07-28", listen: true })
        expect(client.era).toBe("modern")
        expect((yield* SubscriptionRef.get(client.subscription))._tag).toBe("Listening")
        const heard = yield* Effect.forkChild(Stream.runHead(client.listChanged), { startImmediately: true })
        yield* client.callTool({ name: "test_trigger_tool_change" })
        expect(Option.map(yield* Fiber.join(heard), (n) => n._tag)).toEqual(Option.some("ToolListChanged"))
        const listed = (yield* client.listTools()).tools.map((t) => t.name)
        // Back as it was, for whoever lists next.
        yield* client.callTool({ name: "test_trigger_tool_change" })
        const after = (yield* client.listTools()).tools.map((t) => t.name)
        expect([listed.includes("test_dynamic_tool"), after.includes("test_dynamic_tool")]).toEqual([true, false])
      })).pipe(provided), { timeout: 30_000 })

  it.live("an input_required tool is answered through the client's handlers; an unknown resource is -32602 there and -32002 in a 2025-11-25 session", () =>
    Effect.scoped(Effect.gen(function*() {
        const url = yield* serverUrl
        const handlers = { elicit: () => Effect.succeed({ action: "accept", content: { name: "Ada" } } as const) }
        const modern = yield* McpClient.connect(StreamableHttpClientTransport.make({ url }), { protocol: "2026-07-28", handlers, listen: false })
        const greeted = yield* modern.callTool({ name: "test_input_required_result_elicitation" })
        expect(greeted.content).toEqual([{ type: "text", text: "Hello, Ada!" }])
        const missing = "test://nowhere"
        expect(yield* Effect.flip(modern.readResource(missing))).toMatchObject({ _tag: "McpServerError", reason: { code: -32602, data: { uri: missing } } })
        const legacy = yield* McpClient.connect(StreamableHttpClientTransport.make({ url }), { protocol: "2025-11-25" })
        expect(yield* Effect.flip(legacy.readResource(missing))).toMatchObject({ _tag: "McpServerError", reason: { code: -32002, data: { uri: missing } } })
      })).pipe(provided), { timeout: 30_000 })
})
