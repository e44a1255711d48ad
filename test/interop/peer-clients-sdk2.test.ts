/**
 * The official SDK v2 client (`@modelcontextprotocol/client`) against our
 * McpServer serving both eras (`stateless: true`, test/fixtures/peers/our-server.ts),
 * in each of the client's negotiation modes (`auto`, pinned to 2026-07-28,
 * `legacy` = the 2025-11-25 handshake), over Streamable HTTP (one server for
 * the whole file) and stdio (a child per connection). Every row runs one
 * scenario: the era the client settled on, list tools, call a tool with
 * progress, read a resource, get a prompt, the two tools that ask the client
 * (elicitation, sampling: answered by the client's handlers, in 2026 through
 * the input_required round trip), a tool error, an unknown tool, and a
 * cancelled call whose handler the server interrupts.
 *
 * Then the SDK 1.x client (2025 era, a session) and the v2 client pinned to
 * 2026-07-28 (no session) on one endpoint at the same time.
 */
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import {
  Client,
  type JSONRPCMessage,
  ResourceNotFoundError,
  StreamableHTTPClientTransport,
  type VersionNegotiationMode
} from "@modelcontextprotocol/client"
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio"
import { Client as Sdk1Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport as Sdk1HttpTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { CreateMessageRequestSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Exit, Scope } from "effect"
import * as Catalogue from "../fixtures/peers/catalogue.ts"
import { FAIL_TEXT, type OurHttpServer, sampledText, SERVER_INFO, serveHttp } from "../fixtures/peers/our-server.ts"

const ourServer = fileURLToPath(new URL("../fixtures/peers/our-server.ts", import.meta.url))

type Mode = "auto" | "2026-07-28" | "legacy"
type Transport = "http" | "stdio"

const negotiation = (mode: Mode): VersionNegotiationMode => mode === "2026-07-28" ? { pin: mode } : mode

let scope: Scope.Closeable
let http: OurHttpServer
beforeAll(async () => {
  scope = Effect.runSync(Scope.make())
  http = await Effect.runPromise(Scope.provide(serveHttp(), scope))
})
afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

const textOf = (result: object) =>
  ((result as { content?: ReadonlyArray<{ text?: string }> }).content ?? []).map((c) => c.text ?? "").join("")

/** A v2 client that answers elicitation (`name: Ada`) and sampling (`hi Ada`). */
export const makeSdk2Client = (mode: VersionNegotiationMode) => {
  const client = new Client(
    { name: "sdk2-peer", version: "2.4.0" },
    { capabilities: { elicitation: { form: {} }, sampling: {} }, versionNegotiation: { mode } }
  )
  client.setRequestHandler("elicitation/create", async (request) =>
    request.params.message === Catalogue.askNameRequest.message
      ? { action: "accept", content: { name: "Ada" } }
      : { action: "decline" })
  client.setRequestHandler("sampling/createMessage", async () => ({
    model: "test-model",
    role: "assistant",
    content: { type: "text", text: "hi Ada" }
  }))
  return client
}

export type Sent = Array<{ readonly kind: string; readonly params?: Record<string, unknown> | undefined }>

/** What the client wrote: the method of each request and notification, `response` for its answers to the server. */
export const recordSends = <T extends { send: (message: JSONRPCMessage, ...rest: Array<any>) => Promise<void> }>(
  transport: T,
  sent: Sent
): T => {
  const send = transport.send.bind(transport)
  transport.send = (message, ...rest) => {
    sent.push(
      "method" in message
        ? { kind: message.method, params: message.params as Record<string, unknown> | undefined }
        : { kind: "response" }
    )
    return send(message, ...rest)
  }
  return transport
}

const transportFor = (transport: Transport) =>
  transport === "http"
    ? new StreamableHTTPClientTransport(new URL(http.url))
    : new StdioClientTransport({ command: process.execPath, args: [ourServer, "--stdio"], stderr: "ignore" })

/** How many progress notifications the SDK reported as arriving after their call had completed. */
export const droppedProgress = (errors: ReadonlyArray<Error>) =>
  errors.filter((e) => e.message.includes("progress notification for an unknown token")).length

const scenario = async (client: Client, mode: Mode, key: string, errors: ReadonlyArray<Error>, sent?: Sent) => {
  const era = mode === "legacy" ? "legacy" : "modern"
  expect(client.getProtocolEra()).toBe(era)
  expect(client.getNegotiatedProtocolVersion()).toBe(era === "modern" ? "2026-07-28" : "2025-11-25")
  expect(client.getServerVersion()).toMatchObject(SERVER_INFO)

  const { tools } = await client.listTools()
  expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(["echo", "add", "region_echo", "ask_name", "slow"]))

  expect(textOf(await client.callTool({ name: "echo", arguments: { text: "hi" } }))).toBe(Catalogue.echoText("hi"))
  // In 2026 over HTTP the client mirrors `region` into Mcp-Param-Region (the tool's x-mcp-header); the server checks it.
  expect(textOf(await client.callTool({ name: "region_echo", arguments: { region: "eu" } }))).toBe(
    Catalogue.regionText("eu")
  )

  const progress: Array<number> = []
  const slow = await client.callTool({ name: "slow", arguments: { ms: 30 } }, {
    onprogress: (p) => void progress.push(p.progress)
  })
  expect(textOf(slow)).toBe("slept 30 ms")
  // Peer defect (SDK v2 2.4, as 1.x): it handles a notification a microtask later than a response that
  // arrived after it, and forgets a call's progress handler with its response. Progress read together
  // with the result is then reported to `onerror` as "unknown token" and not delivered. Everything our
  // server sent is accounted for: delivered in order, or reported.
  expect(progress).toEqual([1, 2, 3].slice(0, progress.length))
  expect(progress.length + droppedProgress(errors)).toBe(Catalogue.SLOW_STEPS)

  const read = await client.readResource({ uri: Catalogue.HELLO_URI })
  expect(read.contents).toEqual([{ uri: Catalogue.HELLO_URI, mimeType: "text/plain", text: Catalogue.HELLO_TEXT }])

  // An unknown resource: our server sends -32002 in the handshake era and -32602 in 2026-07-28 (which
  // retired -32002); the client makes either its ResourceNotFoundError, with the 2026 code.
  const missing = await client.readResource({ uri: "test://missing" }).then(() => undefined, (e: unknown) => e)
  expect(missing).toBeInstanceOf(ResourceNotFoundError)
  expect(missing).toMatchObject({ code: -32602, data: { uri: "test://missing" } })

  const prompt = await client.getPrompt({ name: "greet", arguments: { name: "Ada" } })
  expect(prompt.messages).toEqual([{ role: "user", content: { type: "text", text: Catalogue.greetText("Ada") } }])

  // Asking the client: a server-to-client request in 2025, an input_required round trip in 2026; either
  // way the client's own handlers answer.
  const before = sent?.length ?? 0
  expect(textOf(await client.callTool({ name: "ask_name" }))).toBe(Catalogue.helloText("Ada"))
  expect(textOf(await client.callTool({ name: "ask_sample" }))).toBe(sampledText("hi Ada"))
  if (sent !== undefined) {
    const asking = sent.slice(before)
    if (era === "modern") {
      // Each call went out twice, the retry carrying the answer; the client never answered a request.
      expect(asking.map((m) => m.kind)).toEqual(["tools/call", "tools/call", "tools/call", "tools/call"])
      expect(asking[1]!.params?.inputResponses).toBeDefined()
      expect(asking[3]!.params?.inputResponses).toBeDefined()
    } else {
      expect(asking.map((m) => m.kind)).toEqual(["tools/call", "response", "tools/call", "response"])
    }
  }

  const failed = await client.callTool({ name: "fail" })
  expect(failed.isError).toBe(true)
  expect(textOf(failed)).toBe(FAIL_TEXT)
  await expect(client.callTool({ name: "no_such_tool" })).rejects.toThrow(/Unknown tool: no_such_tool/)

  // Cancellation: the client aborts once the server says the handler runs; the server interrupts it.
  const abort = new AbortController()
  const hang = client.callTool({ name: "hang", arguments: { key } }, { signal: abort.signal })
  hang.catch(() => undefined)
  expect(textOf(await client.callTool({ name: "await_hang", arguments: { key, state: "started" } }))).toBe(
    `${key}: started`
  )
  abort.abort("enough")
  await expect(hang).rejects.toThrow()
  expect(textOf(await client.callTool({ name: "await_hang", arguments: { key, state: "interrupted" } }))).toBe(
    `${key}: interrupted`
  )
}

const rows: ReadonlyArray<{ readonly transport: Transport; readonly mode: Mode }> = (["http", "stdio"] as const)
  .flatMap((transport) => (["auto", "2026-07-28", "legacy"] as const).map((mode) => ({ transport, mode })))

describe("interop: the SDK v2 client against our server (both eras)", { timeout: 60_000 }, () => {
  for (const { mode, transport } of rows) {
    it.live(`${transport}, versionNegotiation ${mode}`, () =>
      Effect.promise(async () => {
        const client = makeSdk2Client(negotiation(mode))
        const errors: Array<Error> = []
        client.onerror = (e) => void errors.push(e)
        const sent: Sent = []
        try {
          await client.connect(recordSends(transportFor(transport), sent))
          // The handshake happens in the 2025 era only (over stdio, `auto` probes on a sibling process).
          expect(sent.some((m) => m.kind === "initialize")).toBe(mode === "legacy")
          if (transport === "http" && mode !== "legacy") expect(sent[0]?.kind).toBe("server/discover")
          await scenario(client, mode, `sdk2-${transport}-${mode}`, errors, sent)
          // A 2026 HTTP request is cancelled by closing its stream; everywhere else by notifications/cancelled.
          expect(sent.some((m) => m.kind === "notifications/cancelled")).toBe(transport === "stdio" || mode === "legacy")
        } finally {
          await client.close()
        }
      }))
  }
})

/** The 1.x client's share of the concurrent test: the 2025 scenario over its session. */
const sdk1Scenario = async (client: Sdk1Client, key: string, errors: ReadonlyArray<Error>) => {
  const { tools } = await client.listTools()
  expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(["echo", "ask_name", "hang"]))
  expect(textOf(await client.callTool({ name: "echo", arguments: { text: "one" } }))).toBe(Catalogue.echoText("one"))
  const progress: Array<number> = []
  const slow = await client.callTool({ name: "slow", arguments: { ms: 30 } }, undefined, {
    onprogress: (p) => void progress.push(p.progress)
  })
  expect(textOf(slow)).toBe("slept 30 ms")
  // The same microtask ordering as in v2 (see the scenario above).
  expect(progress).toEqual([1, 2, 3].slice(0, progress.length))
  expect(progress.length + droppedProgress(errors)).toBe(Catalogue.SLOW_STEPS)
  const read = await client.readResource({ uri: Catalogue.HELLO_URI })
  expect(read.contents).toEqual([{ uri: Catalogue.HELLO_URI, mimeType: "text/plain", text: Catalogue.HELLO_TEXT }])
  const prompt = await client.getPrompt({ name: "greet", arguments: { name: "Bo" } })
  expect(prompt.messages).toEqual([{ role: "user", content: { type: "text", text: Catalogue.greetText("Bo") } }])
  expect(textOf(await client.callTool({ name: "ask_name" }))).toBe(Catalogue.helloText("Bo"))
  expect(textOf(await client.callTool({ name: "ask_sample" }))).toBe(sampledText("hi Bo"))
  const failed = await client.callTool({ name: "fail" })
  expect(failed.isError).toBe(true)
  const abort = new AbortController()
  const hang = client.callTool({ name: "hang", arguments: { key } }, undefined, { signal: abort.signal })
  hang.catch(() => undefined)
  await client.callTool({ name: "await_hang", arguments: { key, state: "started" } })
  abort.abort("enough")
  await expect(hang).rejects.toThrow()
  expect(textOf(await client.callTool({ name: "await_hang", arguments: { key, state: "interrupted" } }))).toBe(
    `${key}: interrupted`
  )
}

describe("interop: the SDK 1.x and v2 clients on one endpoint at once", { timeout: 60_000 }, () => {
  it.live("1.x (2025-11-25, a session) and v2 pinned to 2026-07-28 (no session) both succeed concurrently", () =>
    Effect.gen(function*() {
      // Its own endpoint, so the session count is this test's alone.
      const server = yield* serveHttp()
      const sessions = () => Effect.runPromise(Effect.map(server.transport.stats, (s) => s.sessions))
      yield* Effect.promise(async () => {
        const sdk1 = new Sdk1Client({ name: "sdk1-peer", version: "1.32.2" }, {
          capabilities: { elicitation: {}, sampling: {} }
        })
        sdk1.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { name: "Bo" } }))
        sdk1.setRequestHandler(CreateMessageRequestSchema, async () => ({
          model: "test-model",
          role: "assistant",
          content: { type: "text", text: "hi Bo" }
        }))
        const sdk1Errors: Array<Error> = []
        sdk1.onerror = (e) => void sdk1Errors.push(e)
        const v2 = makeSdk2Client({ pin: "2026-07-28" })
        const v2Errors: Array<Error> = []
        v2.onerror = (e) => void v2Errors.push(e)
        const v2Transport = new StreamableHTTPClientTransport(new URL(server.url))
        const sdk1Transport = new Sdk1HttpTransport(new URL(server.url))
        try {
          await Promise.all([v2.connect(v2Transport), sdk1.connect(sdk1Transport)])
          expect(v2.getProtocolEra()).toBe("modern")
          expect(sdk1.getServerVersion()).toMatchObject(SERVER_INFO)
          expect(sdk1Transport.sessionId).toBeDefined()
          expect(v2Transport.sessionId).toBeUndefined()
          expect(await sessions()).toBe(1)
          await Promise.all([
            scenario(v2, "2026-07-28", "both-v2", v2Errors),
            sdk1Scenario(sdk1, "both-sdk1", sdk1Errors)
          ])
          // The v2 client's stateless requests opened none.
          expect(await sessions()).toBe(1)
          await sdk1Transport.terminateSession()
          expect(await sessions()).toBe(0)
        } finally {
          await Promise.all([v2.close(), sdk1.close()])
        }
      })
    }).pipe(Effect.scoped))
})
