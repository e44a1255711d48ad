/**
 * The example server the official conformance suite (server side) is run
 * against: every tool, resource, prompt and utility its scenarios call, built
 * on `McpServer` (lifecycle, method table) and mounted on
 * `HttpServerTransport` (Streamable HTTP, sessions, resumable SSE, Host and
 * Origin checks).
 *
 * As a program: `npx node conformance/everything-server.ts [--port 0]
 * [--host 127.0.0.1]` prints `listening http://127.0.0.1:PORT/mcp` once the
 * port is bound; SIGINT/SIGTERM stop it.
 *
 * As a module: `layer(options)` is the whole server. `test://watched-resource`
 * changes every 10 s; sessions subscribed to it get
 * `notifications/resources/updated`.
 */
import { fileURLToPath } from "node:url"
import { NodeRuntime } from "@effect/platform-node"
import { Context, type Duration, Effect, Layer, Option, Schedule, Schema } from "effect"
import type * as McpSchema from "effect/ai/McpSchema"
import { CapabilityNotSupported, ClientRequestUnavailable, RpcError } from "../src/McpError.ts"
import * as HttpServerTransport from "../src/server/HttpServerTransport.ts"
import type { Handler, HandlerContext } from "../src/server/Handler.ts"
import * as McpServer from "../src/server/McpServer.ts"

/**
 * The transport's context of the message being served. `McpServer`'s
 * request context does not carry the HTTP-only `closeSseStream`, so the
 * mounting wrapper provides the raw context as a service for the one tool
 * that needs it.
 */
class TransportCall extends Context.Service<TransportCall, HandlerContext>()("conformance/TransportCall") {}

/**
 * Tells every client of a list change: the sessions of the handshake era and
 * the `subscriptions/listen` streams of the stateless era (`notifyAll` of the
 * handle, which exists only once the definition is mounted).
 */
class ListChanges extends Context.Service<ListChanges, (method: string) => Effect.Effect<void>>()("conformance/ListChanges") {}

// ---------------------------------------------------------------------------
// Fixed payloads

/** A 1x1 red PNG. */
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="

/** A 44-byte WAV header with one silent 8-bit sample at 8 kHz. */
const WAV = (() => {
  const b = Buffer.alloc(45)
  b.write("RIFF", 0)
  b.writeUInt32LE(37, 4)
  b.write("WAVEfmt ", 8)
  b.writeUInt32LE(16, 16)
  b.writeUInt16LE(1, 20) // PCM
  b.writeUInt16LE(1, 22) // mono
  b.writeUInt32LE(8000, 24)
  b.writeUInt32LE(8000, 28)
  b.writeUInt16LE(1, 32)
  b.writeUInt16LE(8, 34)
  b.write("data", 36)
  b.writeUInt32LE(1, 40)
  b.writeUInt8(128, 44)
  return b.toString("base64")
})()

const text = (t: string) => ({ type: "text", text: t })
const toolText = (t: string) => ({ content: [text(t)] })
const noArgs = { type: "object", properties: {} }

// ---------------------------------------------------------------------------
// Tools

type Args = Readonly<Record<string, unknown>>
type ToolResult = Record<string, unknown>

interface Tool {
  readonly name: string
  readonly description: string
  readonly inputSchema: Record<string, unknown>
  readonly run: (args: Args, ctx: McpServer.RequestContext) => Effect.Effect<ToolResult, unknown, TransportCall | ListChanges>
}

const tools: ReadonlyArray<Tool> = [
  {
    name: "test_simple_text",
    description: "Returns one text block",
    inputSchema: noArgs,
    run: () => Effect.succeed(toolText("This is a simple text response for testing."))
  },
  {
    name: "test_image_content",
    description: "Returns one PNG image block",
    inputSchema: noArgs,
    run: () => Effect.succeed({ content: [{ type: "image", data: PNG, mimeType: "image/png" }] })
  },
  {
    name: "test_audio_content",
    description: "Returns one WAV audio block",
    inputSchema: noArgs,
    run: () => Effect.succeed({ content: [{ type: "audio", data: WAV, mimeType: "audio/wav" }] })
  },
  {
    name: "test_embedded_resource",
    description: "Returns an embedded text resource",
    inputSchema: noArgs,
    run: () =>
      Effect.succeed({
        content: [{
          type: "resource",
          resource: { uri: "test://embedded-resource", mimeType: "text/plain", text: "This is an embedded resource content." }
        }]
      })
  },
  {
    name: "test_multiple_content_types",
    description: "Returns text, image and resource blocks",
    inputSchema: noArgs,
    run: () =>
      Effect.succeed({
        content: [
          text("Multiple content types test:"),
          { type: "image", data: PNG, mimeType: "image/png" },
          {
            type: "resource",
            resource: {
              uri: "test://mixed-content-resource",
              mimeType: "application/json",
              text: JSON.stringify({ test: "data", value: 123 })
            }
          }
        ]
      })
  },
  {
    name: "test_tool_with_logging",
    description: "Sends three info log messages while it runs",
    inputSchema: noArgs,
    run: (_, ctx) =>
      Effect.gen(function*() {
        yield* ctx.log("info", "Tool execution started")
        yield* Effect.sleep("50 millis")
        yield* ctx.log("info", "Tool processing data")
        yield* Effect.sleep("50 millis")
        yield* ctx.log("info", "Tool execution completed")
        return toolText("Logging test completed")
      })
  },
  {
    name: "test_error_handling",
    description: "Always reports a tool error",
    inputSchema: noArgs,
    run: () =>
      Effect.succeed({ isError: true, content: [text("This tool intentionally returns an error for testing")] })
  },
  {
    name: "test_tool_with_progress",
    description: "Reports progress 0, 50, 100 of 100",
    inputSchema: noArgs,
    run: (_, ctx) =>
      Effect.gen(function*() {
        yield* ctx.progress(0, { total: 100 })
        yield* Effect.sleep("50 millis")
        yield* ctx.progress(50, { total: 100 })
        yield* Effect.sleep("50 millis")
        yield* ctx.progress(100, { total: 100 })
        return toolText(`Progress test completed (token ${String(ctx.progressToken)})`)
      })
  },
  {
    name: "test_sampling",
    description: "Asks the client's LLM to answer a prompt",
    inputSchema: { type: "object", properties: { prompt: { type: "string" } }, required: ["prompt"] },
    run: (args, ctx) =>
      Effect.gen(function*() {
        const result = yield* ctx.sample({
          messages: [{ role: "user", content: { type: "text", text: String(args.prompt ?? "") } }],
          maxTokens: 100
        })
        const blocks = Array.isArray(result.content) ? result.content : [result.content]
        const answer = blocks.map((b: any) => (b.type === "text" ? b.text : `[${b.type}]`)).join("")
        return toolText(`LLM response: ${answer}`)
      })
  },
  {
    name: "test_elicitation",
    description: "Asks the user for a username and an email",
    inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
    run: (args, ctx) =>
      elicitAndReport(ctx, "User response", {
        message: String(args.message ?? ""),
        requestedSchema: {
          type: "object",
          properties: {
            username: { type: "string", description: "User's response" },
            email: { type: "string", description: "User's email address" }
          },
          required: ["username", "email"]
        }
      })
  },
  {
    name: "test_elicitation_sep1034_defaults",
    description: "Elicits every primitive type with a default (SEP-1034)",
    inputSchema: noArgs,
    run: (_, ctx) =>
      elicitAndReport(ctx, "Elicitation completed", {
        message: "Please review your details",
        requestedSchema: {
          type: "object",
          properties: {
            name: { type: "string", description: "Name", default: "John Doe" },
            age: { type: "integer", description: "Age", default: 30 },
            score: { type: "number", description: "Score", default: 95.5 },
            status: { type: "string", description: "Status", enum: ["active", "inactive", "pending"], default: "active" },
            verified: { type: "boolean", description: "Verified", default: true }
          }
        }
      })
  },
  {
    name: "test_elicitation_sep1330_enums",
    description: "Elicits the five enum shapes (SEP-1330)",
    inputSchema: noArgs,
    run: (_, ctx) =>
      elicitAndReport(ctx, "Elicitation completed", {
        message: "Please choose",
        requestedSchema: {
          type: "object",
          properties: {
            untitledSingle: { type: "string", enum: ["option1", "option2", "option3"] },
            titledSingle: {
              type: "string",
              oneOf: [
                { const: "value1", title: "First Option" },
                { const: "value2", title: "Second Option" },
                { const: "value3", title: "Third Option" }
              ]
            },
            legacyEnum: {
              type: "string",
              enum: ["opt1", "opt2", "opt3"],
              enumNames: ["Option One", "Option Two", "Option Three"]
            },
            untitledMulti: { type: "array", items: { type: "string", enum: ["option1", "option2", "option3"] } },
            titledMulti: {
              type: "array",
              items: {
                anyOf: [
                  { const: "value1", title: "First Choice" },
                  { const: "value2", title: "Second Choice" },
                  { const: "value3", title: "Third Choice" }
                ]
              }
            }
          }
        }
      })
  },
  {
    name: "json_schema_2020_12_tool",
    description: "Tool with JSON Schema 2020-12 features",
    // Every keyword family a server must pass through untouched: dialect, $defs with an $anchor,
    // $ref, composition (allOf/anyOf), conditionals (if/then/else), additionalProperties.
    inputSchema: {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      $defs: {
        address: {
          $anchor: "addressDef",
          type: "object",
          properties: { street: { type: "string" }, city: { type: "string" } }
        }
      },
      properties: {
        name: { type: "string" },
        address: { $ref: "#/$defs/address" },
        contactMethod: { type: "string", enum: ["phone", "email"] },
        phone: { type: "string" },
        email: { type: "string" }
      },
      allOf: [{ anyOf: [{ required: ["phone"] }, { required: ["email"] }] }],
      if: { properties: { contactMethod: { const: "phone" } }, required: ["contactMethod"] },
      then: { required: ["phone"] },
      else: { required: ["email"] },
      additionalProperties: false
    },
    run: (args) => Effect.succeed(toolText(`Received ${JSON.stringify(args)}`))
  },
  {
    name: "test_reconnection",
    description: "Closes its SSE connection mid-call, then answers after the client came back (SSE polling)",
    inputSchema: noArgs,
    run: (_, ctx) =>
      Effect.gen(function*() {
        const call = yield* TransportCall
        yield* ctx.log("info", "closing the stream; reconnect to get the rest")
        if (call.closeSseStream !== undefined) yield* call.closeSseStream()
        // The answer is produced while the client is away, so it has to be replayed.
        yield* Effect.sleep("100 millis")
        yield* ctx.log("info", "produced while the client was away")
        return toolText("Reconnection test completed")
      })
  }
]

// ---------------------------------------------------------------------------
// Stateless era (2026-07-28): input_required rounds, capability checks,
// logging without a level, list changes, Mcp-Param headers

const NAME_FORM = {
  message: "What is your name?",
  requestedSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] }
} as const

const answerField = (answer: McpSchema.ElicitResult, field: string): string =>
  answer.action === "accept" ? String(answer.content?.[field] ?? "") : `(${answer.action})`

const sampleText = (result: McpSchema.CreateMessageResult): string => {
  const blocks = Array.isArray(result.content) ? result.content : [result.content]
  return blocks.map((b: any) => (b.type === "text" ? b.text : `[${b.type}]`)).join("")
}

const GREETING_REQUEST: McpServer.SamplingRequest = {
  messages: [{ role: "user", content: { type: "text", text: "Say hello." } }],
  maxTokens: 50
}

/** Whether the tool list holds `test_dynamic_tool` (and the prompt list `test_dynamic_prompt`); flipped by the trigger tools. */
let dynamicTool = false
let dynamicPrompt = false

const statelessTools: ReadonlyArray<Tool> = [
  {
    name: "test_input_required_result_elicitation",
    description: "Asks for a name under the input key user_name, then greets",
    inputSchema: noArgs,
    run: (_, ctx) =>
      Effect.map(McpServer.inputKey("user_name")(ctx.elicit(NAME_FORM)), (a) => toolText(`Hello, ${answerField(a, "name")}!`))
  },
  {
    name: "test_input_required_result_sampling",
    description: "Asks the client's LLM for a greeting",
    inputSchema: noArgs,
    run: (_, ctx) => Effect.map(ctx.sample(GREETING_REQUEST), (r) => toolText(`LLM said: ${sampleText(r)}`))
  },
  {
    name: "test_input_required_result_list_roots",
    description: "Asks for the client's roots",
    inputSchema: noArgs,
    run: (_, ctx) => Effect.map(ctx.listRoots, (roots) => toolText(`Roots: ${roots.map((r) => r.uri).join(", ")}`))
  },
  {
    name: "test_input_required_result_request_state",
    description: "Asks for a name; the retry's signed requestState is checked before the answer is used",
    inputSchema: noArgs,
    // The runtime refuses a state that fails its check, so an answer reaching here came with a valid one.
    run: (_, ctx) => Effect.map(ctx.elicit(NAME_FORM), (a) => toolText(`state-ok: hello ${answerField(a, "name")}`))
  },
  {
    name: "test_input_required_result_multiple_inputs",
    description: "Asks for a name, an LLM greeting and the roots at once",
    inputSchema: noArgs,
    run: (_, ctx) =>
      Effect.map(
        Effect.all([ctx.elicit(NAME_FORM), ctx.sample(GREETING_REQUEST), ctx.listRoots], { concurrency: "unbounded" }),
        ([answer, greeting, roots]) =>
          toolText(`${sampleText(greeting)} ${answerField(answer, "name")} (${roots.length} roots)`)
      )
  },
  {
    name: "test_input_required_result_multi_round",
    description: "Asks for a name, then for a colour, in two rounds",
    inputSchema: noArgs,
    run: (_, ctx) =>
      Effect.gen(function*() {
        const name = yield* McpServer.inputKey("step1")(ctx.elicit({ ...NAME_FORM, message: "Step 1: What is your name?" }))
        const colour = yield* McpServer.inputKey("step2")(ctx.elicit({
          message: "Step 2: What is your favorite color?",
          requestedSchema: { type: "object", properties: { color: { type: "string" } }, required: ["color"] }
        }))
        return toolText(`${answerField(name, "name")} likes ${answerField(colour, "color")}`)
      })
  },
  {
    name: "test_input_required_result_tampered_state",
    description: "Asks for a confirmation; a retry with an altered requestState is refused",
    inputSchema: noArgs,
    run: (_, ctx) =>
      Effect.map(
        ctx.elicit({ message: "Confirm?", requestedSchema: { type: "object", properties: { ok: { type: "boolean" } } } }),
        (a) => toolText(`confirmed: ${a.action}`)
      )
  },
  {
    name: "test_input_required_result_capabilities",
    description: "Asks only through the capabilities the request declares (elicitation, sampling)",
    inputSchema: noArgs,
    run: (_, ctx) => {
      const declared = ctx.session.clientCapabilities
      const asks: Array<Effect.Effect<string, McpServer.ClientCallError>> = []
      if (declared.elicitation !== undefined) asks.push(Effect.map(ctx.elicit(NAME_FORM), (a) => `name ${answerField(a, "name")}`))
      if (declared.sampling !== undefined) asks.push(Effect.map(ctx.sample(GREETING_REQUEST), (r) => `LLM ${sampleText(r)}`))
      return Effect.map(
        Effect.all(asks, { concurrency: "unbounded" }),
        (parts) => toolText(parts.length === 0 ? "nothing to ask" : parts.join("; "))
      )
    }
  },
  {
    name: "test_missing_capability",
    description: "Needs the sampling capability: without it the call fails with -32021",
    inputSchema: noArgs,
    run: (_, ctx) => Effect.map(ctx.sample(GREETING_REQUEST), (r) => toolText(`LLM said: ${sampleText(r)}`))
  },
  {
    name: "test_streaming_elicitation",
    description: "Reports progress, then asks for a name (stateless era: an input_required result, never a request)",
    inputSchema: noArgs,
    run: (_, ctx) =>
      Effect.gen(function*() {
        yield* ctx.progress(0, { total: 1, message: "asking for a name" })
        const answer = yield* ctx.elicit(NAME_FORM)
        return toolText(`Hello, ${answerField(answer, "name")}!`)
      })
  },
  {
    name: "test_logging_tool",
    description: "Logs at info level while it runs (sent only to a request that set a log level)",
    inputSchema: noArgs,
    run: (_, ctx) =>
      Effect.gen(function*() {
        yield* ctx.log("info", "Logging tool started")
        yield* ctx.log("warning", "Logging tool halfway")
        yield* ctx.log("info", "Logging tool finished")
        return toolText("Logging tool completed")
      })
  },
  {
    name: "test_trigger_tool_change",
    description: "Adds or removes test_dynamic_tool and announces the tool list change",
    inputSchema: noArgs,
    run: () =>
      Effect.gen(function*() {
        dynamicTool = !dynamicTool
        yield* (yield* ListChanges)("notifications/tools/list_changed")
        return toolText(`test_dynamic_tool ${dynamicTool ? "added" : "removed"}`)
      })
  },
  {
    name: "test_trigger_prompt_change",
    description: "Adds or removes test_dynamic_prompt and announces the prompt list change",
    inputSchema: noArgs,
    run: () =>
      Effect.gen(function*() {
        dynamicPrompt = !dynamicPrompt
        yield* (yield* ListChanges)("notifications/prompts/list_changed")
        return toolText(`test_dynamic_prompt ${dynamicPrompt ? "added" : "removed"}`)
      })
  },
  {
    name: "test_header_param",
    description: "Echoes its region, which an HTTP client also sends as the Mcp-Param-Region header",
    inputSchema: {
      type: "object",
      properties: { region: { type: "string", description: "Where to run", "x-mcp-header": "Region" } },
      required: ["region"]
    },
    run: (args) => Effect.succeed(toolText(`region: ${String(args.region)}`))
  }
]

const dynamicToolDef: Tool = {
  name: "test_dynamic_tool",
  description: "Present while test_trigger_tool_change has added it",
  inputSchema: noArgs,
  run: () => Effect.succeed(toolText("dynamic tool"))
}

const listedTools = (): ReadonlyArray<Tool> => dynamicTool ? [...allTools, dynamicToolDef] : allTools

// The suite's schemas (enumNames, oneOf, anyOf) are wider than the typed
// elicitation params, so the request goes out as it is written here.
const elicitAndReport = (ctx: McpServer.RequestContext, label: string, params: Record<string, unknown>) =>
  Effect.map(ctx.elicit(params as McpServer.ElicitRequest), (r) =>
    toolText(`${label}: action=${r.action}, content=${JSON.stringify("content" in r ? r.content ?? {} : {})}`))

const allTools: ReadonlyArray<Tool> = [...tools, ...statelessTools]
const findTool = (name: string): Tool | undefined => listedTools().find((t) => t.name === name)

const CallParams = Schema.Struct({
  name: Schema.String,
  arguments: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
})

// ---------------------------------------------------------------------------
// Resources and prompts

const resources = [
  { uri: "test://static-text", name: "static-text", description: "A static text resource", mimeType: "text/plain" },
  { uri: "test://static-binary", name: "static-binary", description: "A static PNG", mimeType: "image/png" },
  { uri: "test://watched-resource", name: "watched-resource", description: "Subscribe to hear of its changes", mimeType: "text/plain" }
]

const templates = [{
  uriTemplate: "test://template/{id}/data",
  name: "template-data",
  description: "JSON data for an id",
  mimeType: "application/json"
}]

const TEMPLATE = /^test:\/\/template\/([^/]+)\/data$/

/** Bumped by the server every `watchedInterval`; subscribers hear of each change. */
let watchedVersion = 0

/**
 * An unknown resource: -32002 in the handshake era (2025-11-25), -32602
 * Invalid params in the stateless era (SEP-2164); `data.uri` in both.
 */
const resourceNotFound = (uri: string, era: string) =>
  new RpcError({ code: era === "modern" ? -32602 : -32002, rpcMessage: "Resource not found", data: { uri } })

const readResource = (uri: string, era: string): Effect.Effect<Record<string, unknown>, RpcError> => {
  switch (uri) {
    case "test://static-text":
      return Effect.succeed({ uri, mimeType: "text/plain", text: "This is the content of the static text resource." })
    case "test://static-binary":
      return Effect.succeed({ uri, mimeType: "image/png", blob: PNG })
    case "test://watched-resource":
      return Effect.succeed({ uri, mimeType: "text/plain", text: `Watched resource content, version ${watchedVersion}.` })
    case "test://embedded-resource":
      return Effect.succeed({ uri, mimeType: "text/plain", text: "This is an embedded resource content." })
  }
  const m = TEMPLATE.exec(uri)
  if (m !== null) {
    const id = decodeURIComponent(m[1]!)
    return Effect.succeed({
      uri,
      mimeType: "application/json",
      text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` })
    })
  }
  return Effect.fail(resourceNotFound(uri, era))
}

const prompts = [
  { name: "test_simple_prompt", description: "A prompt without arguments" },
  {
    name: "test_prompt_with_arguments",
    description: "A prompt with two arguments",
    arguments: [
      { name: "arg1", description: "First test argument", required: true },
      { name: "arg2", description: "Second test argument", required: true }
    ]
  },
  {
    name: "test_prompt_with_embedded_resource",
    description: "A prompt that embeds a resource",
    arguments: [{ name: "resourceUri", description: "URI of the resource to embed", required: true }]
  },
  { name: "test_prompt_with_image", description: "A prompt with an image" },
  { name: "test_input_required_result_prompt", description: "A prompt that first asks the user for context" }
]

const dynamicPromptDef = { name: "test_dynamic_prompt", description: "Present while test_trigger_prompt_change has added it" }

const listedPrompts = () => dynamicPrompt ? [...prompts, dynamicPromptDef] : prompts

const GetPromptParams = Schema.Struct({
  name: Schema.String,
  arguments: Schema.optionalKey(Schema.Record(Schema.String, Schema.String))
})

const getPrompt = (
  name: string,
  args: Readonly<Record<string, string>>,
  ctx: McpServer.RequestContext
): Effect.Effect<unknown, RpcError | McpServer.ClientCallError> => {
  const user = (content: unknown) => ({ role: "user", content })
  const missing = (arg: string) =>
    Effect.fail(new RpcError({ code: -32602, rpcMessage: `Missing required argument: ${arg}` }))
  switch (name) {
    case "test_simple_prompt":
      return Effect.succeed({ messages: [user(text("This is a simple prompt for testing."))] })
    case "test_prompt_with_arguments":
      if (args.arg1 === undefined) return missing("arg1")
      if (args.arg2 === undefined) return missing("arg2")
      return Effect.succeed({
        messages: [user(text(`Prompt with arguments: arg1='${args.arg1}', arg2='${args.arg2}'`))]
      })
    case "test_prompt_with_embedded_resource":
      if (args.resourceUri === undefined) return missing("resourceUri")
      return Effect.succeed({
        messages: [
          user({
            type: "resource",
            resource: { uri: args.resourceUri, mimeType: "text/plain", text: "Embedded resource content for testing." }
          }),
          user(text("Please process the embedded resource above."))
        ]
      })
    case "test_input_required_result_prompt":
      return Effect.map(
        ctx.elicit({
          message: "What context should the prompt use?",
          requestedSchema: { type: "object", properties: { context: { type: "string" } }, required: ["context"] }
        }),
        (answer) => ({ messages: [user(text(`Use this context: ${answerField(answer, "context")}`))] })
      )
    case "test_dynamic_prompt":
      if (dynamicPrompt) return Effect.succeed({ messages: [user(text("The dynamic prompt."))] })
      break
    case "test_prompt_with_image":
      return Effect.succeed({
        messages: [user({ type: "image", data: PNG, mimeType: "image/png" }), user(text("Please analyze the image above."))]
      })
  }
  return Effect.fail(new RpcError({ code: -32602, rpcMessage: `Unknown prompt: ${name}` }))
}

/** Candidate values for completion, per argument name. */
const completions: Readonly<Record<string, ReadonlyArray<string>>> = {
  arg1: ["test", "testing", "tested", "other"],
  arg2: ["world", "wide", "web"],
  resourceUri: ["test://static-text", "test://static-binary", "test://watched-resource"],
  id: ["1", "42", "123"]
}

const CompleteParams = Schema.Struct({
  ref: Schema.Record(Schema.String, Schema.Unknown),
  argument: Schema.Struct({ name: Schema.String, value: Schema.String })
})

const UriParams = Schema.Struct({ uri: Schema.String })

// ---------------------------------------------------------------------------
// The server

/** Resource subscriptions, per session (the key "" stands for no session). */
const subscriptions = new Map<string, Set<string>>()
const subsOf = (sessionId: string | undefined) => {
  const key = sessionId ?? ""
  let set = subscriptions.get(key)
  if (set === undefined) subscriptions.set(key, set = new Set())
  return set
}

export const definition = McpServer.make({
  serverInfo: { name: "effect-mcp-transport-everything", version: "0.1.0" },
  // Both eras: the handshake (2025-11-25 and before) and the stateless era (2026-07-28).
  stateless: true,
  instructions: "The conformance suite's example server, built on effect-mcp-transport.",
  // The trigger tools change both lists and announce it.
  capabilities: { tools: { listChanged: true }, prompts: { listChanged: true } }
}).pipe(
  McpServer.method("tools/list", {}, () =>
    Effect.sync(() => ({
      tools: listedTools().map(({ description, inputSchema, name }) => ({ name, description, inputSchema }))
    }))),
  McpServer.method("tools/call", { params: CallParams }, (p, ctx) => {
    const tool = findTool(p.name)
    if (tool === undefined) return Effect.fail(new RpcError({ code: -32602, rpcMessage: `Unknown tool: ${p.name}` }))
    // A tool that fails reports it in the result (isError), not as a protocol error; a capability
    // the client did not declare is the request's error (-32021), so that one goes through.
    return tool.run(p.arguments ?? {}, ctx).pipe(
      Effect.catch((e) =>
        e instanceof CapabilityNotSupported
          ? Effect.fail(e)
          : Effect.succeed({ isError: true, content: [text(`Tool ${p.name} failed: ${describe(e)}`)] })
      )
    )
  }),
  McpServer.method("resources/list", {}, () => Effect.succeed({ resources })),
  McpServer.method("resources/templates/list", {}, () => Effect.succeed({ resourceTemplates: templates })),
  McpServer.method("resources/read", { params: UriParams }, ({ uri }, ctx) =>
    Effect.map(readResource(uri, ctx.session.era), (c) => ({ contents: [c] }))),
  McpServer.method("resources/subscribe", { params: UriParams }, ({ uri }, ctx) =>
    Effect.sync(() => void subsOf(ctx.sessionId).add(uri))),
  McpServer.method("resources/unsubscribe", { params: UriParams }, ({ uri }, ctx) =>
    Effect.sync(() => void subsOf(ctx.sessionId).delete(uri))),
  McpServer.method("prompts/list", {}, () => Effect.sync(() => ({ prompts: listedPrompts() }))),
  McpServer.method("prompts/get", { params: GetPromptParams }, (p, ctx) => getPrompt(p.name, p.arguments ?? {}, ctx)),
  McpServer.method("completion/complete", { params: CompleteParams }, ({ argument }) => {
    const values = (completions[argument.name] ?? []).filter((v) => v.startsWith(argument.value))
    return Effect.succeed({ completion: { values, total: values.length, hasMore: false } })
  })
)

const describe = (e: unknown): string =>
  typeof e === "object" && e !== null && "_tag" in e ? String((e as { _tag: unknown })._tag) : String(e)

export interface ServerOptions {
  readonly host?: string | undefined
  readonly port?: number | undefined
  /** How often `test://watched-resource` changes (default 10 s). */
  readonly watchedInterval?: Duration.Input | undefined
}

const WATCHED = "test://watched-resource"

/** The context of the server's own reads (the tool schemas): no client to talk to. */
const quietCall: HandlerContext = {
  sessionId: undefined,
  requestId: undefined,
  notify: () => Effect.void,
  request: (method) => Effect.fail(new ClientRequestUnavailable({ method, reason: "the server is reading its own tool list" }))
}

/**
 * The server as a layer. Besides serving, it changes the watched resource
 * now and then and tells the sessions subscribed to it
 * (`notifications/resources/updated` on their standalone stream), and drops
 * the state of ended HTTP sessions (McpServer's and the subscriptions).
 */
export const layer = (options?: ServerOptions) =>
  Layer.unwrap(Effect.gen(function*() {
    const handle = yield* McpServer.toHandler(definition)
    const announce = (method: string) => handle.notifyAll(method)
    const serve = <A, E>(effect: Effect.Effect<A, E, TransportCall | ListChanges>, context: HandlerContext) =>
      effect.pipe(Effect.provideService(TransportCall, context), Effect.provideService(ListChanges, announce))
    const schemaOf = handle.handler.toolInputSchema
    // The wrapper keeps what the transport reads off the handler: the eras it serves, the tool
    // schemas behind the Mcp-Param-* header checks, and the end of open subscriptions.
    const handler: Handler = Object.assign(
      (message: Parameters<Handler>[0], context: HandlerContext) => serve(handle.handler(message, context), context),
      {
        stateless: handle.handler.stateless,
        shutdown: handle.handler.shutdown,
        ...(schemaOf === undefined ? {} : { toolInputSchema: (name: string) => serve(schemaOf(name), quietCall) }),
        // Ended sessions drop their subscriptions with the rest of their state.
        sessionEnded: (id: string | undefined) =>
          Effect.andThen(
            Effect.sync(() => void subscriptions.delete(id ?? "")),
            handle.handler.sessionEnded?.(id) ?? Effect.void
          )
      }
    )
    const background = Layer.effectDiscard(Effect.gen(function*() {
      const transport = yield* HttpServerTransport.HttpServerTransport
      const change = Effect.suspend(() => {
        watchedVersion++
        const subscribers = Array.from(subscriptions).flatMap(([id, uris]) => (id !== "" && uris.has(WATCHED) ? [id] : []))
        return Effect.forEach(subscribers, (id) =>
          Effect.flatMap(transport.sessionContext(id), (ctx) =>
            Option.isSome(ctx) ? Effect.ignore(ctx.value.notify("notifications/resources/updated", { uri: WATCHED })) : Effect.void
          ), { discard: true })
      })
      yield* Effect.forkScoped(Effect.repeat(change, Schedule.spaced(options?.watchedInterval ?? "10 seconds")))
    }))
    return background.pipe(
      Layer.provideMerge(HttpServerTransport.layer(handler, { host: options?.host ?? "127.0.0.1", port: options?.port ?? 0 }))
    )
  }))

// ---------------------------------------------------------------------------
// As a program

const argValue = (name: string): string | undefined => {
  const at = process.argv.indexOf(`--${name}`)
  return at >= 0 ? process.argv[at + 1] : undefined
}

const main = () => {
  const announce = Layer.effectDiscard(Effect.gen(function*() {
    const transport = yield* HttpServerTransport.HttpServerTransport
    const url = Option.getOrElse(transport.url, () => "unknown")
    yield* Effect.sync(() => process.stdout.write(`listening ${url}\n`))
  }))
  const server = announce.pipe(
    Layer.provideMerge(layer({ host: argValue("host"), port: Number(argValue("port") ?? 0) }))
  )
  NodeRuntime.runMain(Layer.launch(server))
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) main()

