/**
 * effect/ai's `McpClient` (effect 4.1) against our McpServer serving both
 * eras (`stateless: true`, test/fixtures/peers/our-server.ts), with each of
 * the revisions it speaks (2026-07-28 and 2025-11-25) over Streamable HTTP
 * (one server for the whole file) and stdio (a child per connection).
 *
 * The client is deliberately small: it declares no client capabilities,
 * answers every server request but `ping` with -32601, fails on an
 * `input_required` result, and reports no progress. So a tool that asks the
 * client cannot succeed; the rows check that each era fails it cleanly.
 */
import { fileURLToPath } from "node:url"
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Scope } from "effect"
import * as McpClient from "effect/ai/McpClient"
import type * as McpClientError from "effect/ai/McpClientError"
import * as McpProtocol from "effect/ai/McpProtocol"
import type * as HttpClient from "effect/http/HttpClient"
import * as ChildProcess from "effect/process/ChildProcess"
import type * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import * as Schema from "effect/Schema"
import * as Catalogue from "../fixtures/peers/catalogue.ts"
import { FAIL_TEXT, type OurHttpServer, SERVER_INFO, serveHttp } from "../fixtures/peers/our-server.ts"

const ourServer = fileURLToPath(new URL("../fixtures/peers/our-server.ts", import.meta.url))
const Env = Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici)

type Revision = "2026-07-28" | "2025-11-25"
type Transport = "http" | "stdio"

let scope: Scope.Closeable
let http: OurHttpServer
beforeAll(async () => {
  scope = Effect.runSync(Scope.make())
  http = await Effect.runPromise(Scope.provide(serveHttp(), scope))
})
afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

const protocolOf = (revision: Revision) =>
  revision === "2026-07-28" ? McpProtocol.v2026_07_28 : McpProtocol.v2025_11_25

const transportOf = (
  transport: Transport,
  revision: Revision
): Effect.Effect<
  McpClient.Transport,
  McpClientError.McpClientError,
  Scope.Scope | HttpClient.HttpClient | ChildProcessSpawner.ChildProcessSpawner
> =>
  transport === "http"
    ? McpClient.http({ url: http.url, protocol: protocolOf(revision) })
    : McpClient.stdio({
      command: ChildProcess.make(process.execPath, [ourServer, "--stdio"]),
      protocol: protocolOf(revision)
    })

const textOf = (result: { readonly content: ReadonlyArray<unknown> }) =>
  result.content.map((c) => (c as { text?: string }).text ?? "").join("")

const reasonOf = (exit: Exit.Exit<unknown, unknown>) => {
  if (Exit.isSuccess(exit)) return undefined
  const error = exit.cause.reasons.find((r) => r._tag === "Fail")
  return (error as { error?: { reason?: Record<string, unknown> } } | undefined)?.error?.reason
}

const scenario = (transport: Transport, revision: Revision) =>
  Effect.gen(function*() {
    const client = yield* McpClient.make({ name: "effect-ai-peer", version: "4.1.0" }).pipe(
      Effect.provideServiceEffect(McpClient.Transport, transportOf(transport, revision))
    )
    expect(client.protocolVersion).toBe(revision)
    expect(client.serverInfo).toMatchObject(SERVER_INFO)

    const tools = yield* client.listTools()
    const tool = (name: string) => {
      const found = tools.find((t) => t.name === name)
      if (found === undefined) throw new Error(`no tool ${name}`)
      return found
    }
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(["echo", "add", "region_echo", "slow", "hang"]))

    const echo = yield* client.callTool({ tool: tool("echo"), arguments: { text: "hi" } })
    expect(textOf(echo)).toBe(Catalogue.echoText("hi"))
    // Over HTTP in 2026 the client mirrors `region` into Mcp-Param-Region; the server checks that it does.
    const region = yield* client.callTool({ tool: tool("region_echo"), arguments: { region: "eu" } })
    expect(textOf(region)).toBe(Catalogue.regionText("eu"))
    // No progress API; the call still completes.
    const slow = yield* client.callTool({ tool: tool("slow"), arguments: { ms: 30 } })
    expect(textOf(slow)).toBe("slept 30 ms")

    const resources = yield* client.listResources()
    expect(resources.map((r) => r.uri)).toEqual([Catalogue.HELLO_URI])
    const read = yield* client.readResource({ uri: Catalogue.HELLO_URI })
    expect(read.contents).toEqual([{ uri: Catalogue.HELLO_URI, mimeType: "text/plain", text: Catalogue.HELLO_TEXT }])

    // An unknown resource, as our server sends it: -32002 in the handshake era; 2026-07-28 retired that
    // code for -32602 (the handler says -32002 once for both eras).
    const missing = yield* Effect.exit(client.readResource({ uri: "test://missing" }))
    expect(reasonOf(missing)).toMatchObject({
      _tag: "ProtocolError",
      code: revision === "2026-07-28" ? -32602 : -32002,
      data: { uri: "test://missing" }
    })

    const prompts = yield* client.listPrompts()
    const greet = prompts.find((p) => p.name === "greet")!
    const prompt = yield* client.getPrompt({ prompt: greet, arguments: { name: "Ada" } })
    expect(prompt.messages).toEqual([{ role: "user", content: { type: "text", text: Catalogue.greetText("Ada") } }])

    // A tool error is a result; with a schema the client turns it into a ToolError.
    const failed = yield* client.callTool({ tool: tool("fail") })
    expect(failed.isError).toBe(true)
    expect(textOf(failed)).toBe(FAIL_TEXT)
    const decoded = yield* Effect.exit(client.callTool({ tool: tool("fail"), schema: Schema.Unknown }))
    expect(reasonOf(decoded)).toMatchObject({ _tag: "ToolError" })

    // An unknown tool is a JSON-RPC error.
    const unknown = yield* Effect.exit(client.callTool({ tool: { ...tool("echo"), name: "no_such_tool" } }))
    expect(reasonOf(unknown)).toMatchObject({ _tag: "ProtocolError", code: -32602 })

    // Asking the client: it declares no elicitation capability (in 2026 an empty clientCapabilities in
    // every request's _meta), so our server never asks. In 2026 that is -32021 naming the capability
    // (HTTP 400, which this client reports as an HttpError); in 2025, where no code is defined for it,
    // the handler's escaped failure is an internal error.
    const asked = yield* Effect.exit(client.callTool({ tool: tool("ask_name") }))
    expect(reasonOf(asked)).toMatchObject(
      revision === "2026-07-28"
        ? {
          _tag: transport === "http" ? "HttpError" : "ProtocolError",
          ...(transport === "http" ? { status: 400 } : {}),
          code: -32021,
          data: { requiredCapabilities: { elicitation: {} } }
        }
        : { _tag: "ProtocolError", code: -32603 }
    )

    // Cancellation: interrupting the call closes its stream (2026, HTTP) or sends notifications/cancelled;
    // either way the server interrupts the handler.
    const key = `effect-ai-${transport}-${revision}`
    const hang = yield* client.callTool({ tool: tool("hang"), arguments: { key } }).pipe(
      Effect.forkChild({ startImmediately: true })
    )
    const started = yield* client.callTool({ tool: tool("await_hang"), arguments: { key, state: "started" } })
    expect(textOf(started)).toBe(`${key}: started`)
    yield* Fiber.interrupt(hang)
    const interrupted = yield* client.callTool({ tool: tool("await_hang"), arguments: { key, state: "interrupted" } })
    expect(textOf(interrupted)).toBe(`${key}: interrupted`)
  }).pipe(Effect.scoped, Effect.provide(Env))

const rows = (["http", "stdio"] as const).flatMap((transport) =>
  (["2026-07-28", "2025-11-25"] as const).map((revision) => ({ transport, revision }))
)

describe("interop: effect/ai McpClient against our server (both eras)", { timeout: 60_000 }, () => {
  for (const { revision, transport } of rows) {
    it.live(`${transport}, ${revision}`, () => scenario(transport, revision))
  }
})
