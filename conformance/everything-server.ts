/**
 * The example server the official conformance suite (server side) is run
 * against: every tool, resource, prompt and utility its scenarios call, defined
 * with `Tool`, `Resource` and `Prompt` on `McpServer` and mounted on
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
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as McpSchema from "effect/ai/McpSchema"
import { CapabilityNotSupported, ClientRequestUnavailable, RpcError } from "../src/McpError.ts"
import * as HttpServerTransport from "../src/server/HttpServerTransport.ts"
import type { Handler, HandlerContext } from "../src/server/Handler.ts"
import * as JsonSchema from "../src/server/JsonSchema.ts"
import * as McpServer from "../src/server/McpServer.ts"
import * as Prompt from "../src/server/Prompt.ts"
import * as Resource from "../src/server/Resource.ts"
import * as Task from "../src/server/Task.ts"
import * as Tool from "../src/server/Tool.ts"

/**
 * The transport's context of the message being served. `McpServer`'s
 * request context does not carry the HTTP-only `closeSseStream`, so the
 * mounting wrapper provides the raw context as a service for the one tool
 * that needs it.
 */
class TransportCall extends Context.Service<TransportCall, HandlerContext>()("conformance/TransportCall") {}

/**
 * The definitions of the serving handler (`handle.definitions`, which exists
 * only once the definition is mounted): the trigger tools add and remove
 * the dynamic tool and prompt through it, and it announces each change.
 */
class LiveDefinitions extends Context.Service<LiveDefinitions, McpServer.Definitions<never>>()("conformance/LiveDefinitions") {}

// ---------------------------------------------------------------------------
// Fixed payloads

const WATCHED = "test://watched-resource"

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

// ---------------------------------------------------------------------------
// Hand-written definitions

const JSON_SCHEMA_TOOL = "json_schema_2020_12_tool"

/** Every keyword family a server must pass through untouched: dialect, $defs with an $anchor,
 * $ref, composition (allOf/anyOf), conditionals (if/then/else), additionalProperties. */
const JSON_SCHEMA_2020_12 = {
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
}

const EMBEDDED = "test://embedded-resource"

// ---------------------------------------------------------------------------
// Tools

/**
 * A tool that fails reports it in the result (isError), not as a protocol
 * error; a capability the client did not declare is the request's error
 * (-32021), so that one goes through.
 */
const reported = (name: string) => <A, E, R>(run: Effect.Effect<A, E, R>) =>
  run.pipe(
    Effect.catch((e) =>
      e instanceof CapabilityNotSupported
        ? Effect.fail(e)
        : Effect.succeed({ isError: true, content: [text(`Tool ${name} failed: ${describe(e)}`)] })
    )
  )

const describe = (e: unknown): string =>
  typeof e === "object" && e !== null && "_tag" in e ? String((e as { _tag: unknown })._tag) : String(e)

// The suite's schemas (enumNames, oneOf, anyOf) are wider than the typed
// elicitation params, so the request goes out as it is written here.
const elicitAndReport = (ctx: McpServer.RequestContext, label: string, params: Record<string, unknown>) =>
  Effect.map(ctx.elicit(params as McpServer.ElicitRequest), (r) =>
    toolText(`${label}: action=${r.action}, content=${JSON.stringify("content" in r ? r.content ?? {} : {})}`))

const contentTools = <R>(server: McpServer.McpServer<R>) =>
  server.pipe(
    Tool.add("test_simple_text", { description: "Returns one text block" }, () =>
      Effect.succeed("This is a simple text response for testing.")),
    Tool.add("test_image_content", { description: "Returns one PNG image block" }, () =>
      Effect.succeed({ content: [{ type: "image", data: PNG, mimeType: "image/png" }] })),
    Tool.add("test_audio_content", { description: "Returns one WAV audio block" }, () =>
      Effect.succeed({ content: [{ type: "audio", data: WAV, mimeType: "audio/wav" }] })),
    Tool.add("test_embedded_resource", { description: "Returns an embedded text resource" }, () =>
      Effect.succeed({
        content: [{
          type: "resource",
          resource: { uri: EMBEDDED, mimeType: "text/plain", text: "This is an embedded resource content." }
        }]
      })),
    Tool.add("test_multiple_content_types", { description: "Returns text, image and resource blocks" }, () =>
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
      })),
    Tool.add("test_tool_with_logging", { description: "Sends three info log messages while it runs" }, (_, ctx) =>
      Effect.gen(function*() {
        yield* ctx.log("info", "Tool execution started")
        yield* Effect.sleep("50 millis")
        yield* ctx.log("info", "Tool processing data")
        yield* Effect.sleep("50 millis")
        yield* ctx.log("info", "Tool execution completed")
        return "Logging test completed"
      }).pipe(reported("test_tool_with_logging"))),
    Tool.add("test_error_handling", { description: "Always reports a tool error" }, () =>
      Effect.succeed({ isError: true, content: [text("This tool intentionally returns an error for testing")] })),
    Tool.add("test_tool_with_progress", { description: "Reports progress 0, 50, 100 of 100" }, (_, ctx) =>
      Effect.gen(function*() {
        yield* ctx.progress(0, { total: 100 })
        yield* Effect.sleep("50 millis")
        yield* ctx.progress(50, { total: 100 })
        yield* Effect.sleep("50 millis")
        yield* ctx.progress(100, { total: 100 })
        return `Progress test completed (token ${String(ctx.progressToken)})`
      }).pipe(reported("test_tool_with_progress"))),
    Tool.add("test_sampling", {
      description: "Asks the client's LLM to answer a prompt",
      parameters: { prompt: Schema.String }
    }, ({ prompt }, ctx) =>
      ctx.sample({ messages: [{ role: "user", content: { type: "text", text: prompt } }], maxTokens: 100 }).pipe(
        Effect.map((result) => toolText(`LLM response: ${sampleText(result)}`)),
        reported("test_sampling")
      )),
    Tool.add("test_elicitation", {
      description: "Asks the user for a username and an email",
      parameters: { message: Schema.String }
    }, ({ message }, ctx) =>
      elicitAndReport(ctx, "User response", {
        message,
        requestedSchema: {
          type: "object",
          properties: {
            username: { type: "string", description: "User's response" },
            email: { type: "string", description: "User's email address" }
          },
          required: ["username", "email"]
        }
      }).pipe(reported("test_elicitation"))),
    Tool.add("test_elicitation_sep1034_defaults", { description: "Elicits every primitive type with a default (SEP-1034)" }, (_, ctx) =>
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
      }).pipe(reported("test_elicitation_sep1034_defaults"))),
    Tool.add("test_elicitation_sep1330_enums", { description: "Elicits the five enum shapes (SEP-1330)" }, (_, ctx) =>
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
      }).pipe(reported("test_elicitation_sep1330_enums"))),
    // No Effect Schema generates this document ($anchor, if/then/else): it is listed as written, and
    // the arguments reach the handler as they came.
    Tool.addJsonSchema(JSON_SCHEMA_TOOL, {
      description: "Tool with JSON Schema 2020-12 features",
      inputSchema: JSON_SCHEMA_2020_12
    }, (args) => Effect.succeed(`Received ${JSON.stringify(args)}`)),
    Tool.add("test_reconnection", {
      description: "Closes its SSE connection mid-call, then answers after the client came back (SSE polling)"
    }, (_, ctx) =>
      Effect.gen(function*() {
        const call = yield* TransportCall
        yield* ctx.log("info", "closing the stream; reconnect to get the rest")
        if (call.closeSseStream !== undefined) yield* call.closeSseStream()
        // The answer is produced while the client is away, so it has to be replayed.
        yield* Effect.sleep("100 millis")
        yield* ctx.log("info", "produced while the client was away")
        return "Reconnection test completed"
      }).pipe(reported("test_reconnection")))
  )

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

/** Whether `test_dynamic_tool` (and `test_dynamic_prompt`) is defined; flipped by the trigger tools. */
let dynamicTool = false
let dynamicPrompt = false

const dynamicToolStep = Tool.add("test_dynamic_tool", { description: "Present while test_trigger_tool_change has added it" }, () =>
  Effect.succeed("dynamic tool"))

const dynamicPromptStep = Prompt.add("test_dynamic_prompt", { description: "Present while test_trigger_prompt_change has added it" }, () =>
  Effect.succeed("The dynamic prompt."))

const statelessTools = <R>(server: McpServer.McpServer<R>) =>
  server.pipe(
    Tool.add("test_input_required_result_elicitation", {
      description: "Asks for a name under the input key user_name, then greets"
    }, (_, ctx) =>
      McpServer.inputKey("user_name")(ctx.elicit(NAME_FORM)).pipe(
        Effect.map((a) => `Hello, ${answerField(a, "name")}!`),
        reported("test_input_required_result_elicitation")
      )),
    Tool.add("test_input_required_result_sampling", { description: "Asks the client's LLM for a greeting" }, (_, ctx) =>
      ctx.sample(GREETING_REQUEST).pipe(
        Effect.map((r) => `LLM said: ${sampleText(r)}`),
        reported("test_input_required_result_sampling")
      )),
    Tool.add("test_input_required_result_list_roots", { description: "Asks for the client's roots" }, (_, ctx) =>
      ctx.listRoots.pipe(
        Effect.map((roots) => `Roots: ${roots.map((r) => r.uri).join(", ")}`),
        reported("test_input_required_result_list_roots")
      )),
    Tool.add("test_input_required_result_request_state", {
      description: "Asks for a name; the retry's signed requestState is checked before the answer is used"
    }, (_, ctx) =>
      // The runtime refuses a state that fails its check, so an answer reaching here came with a valid one.
      ctx.elicit(NAME_FORM).pipe(
        Effect.map((a) => `state-ok: hello ${answerField(a, "name")}`),
        reported("test_input_required_result_request_state")
      )),
    Tool.add("test_input_required_result_multiple_inputs", {
      description: "Asks for a name, an LLM greeting and the roots at once"
    }, (_, ctx) =>
      Effect.all([ctx.elicit(NAME_FORM), ctx.sample(GREETING_REQUEST), ctx.listRoots], { concurrency: "unbounded" }).pipe(
        Effect.map(([answer, greeting, roots]) =>
          `${sampleText(greeting)} ${answerField(answer, "name")} (${roots.length} roots)`
        ),
        reported("test_input_required_result_multiple_inputs")
      )),
    Tool.add("test_input_required_result_multi_round", { description: "Asks for a name, then for a colour, in two rounds" }, (_, ctx) =>
      Effect.gen(function*() {
        const name = yield* McpServer.inputKey("step1")(ctx.elicit({ ...NAME_FORM, message: "Step 1: What is your name?" }))
        const colour = yield* McpServer.inputKey("step2")(ctx.elicit({
          message: "Step 2: What is your favorite color?",
          requestedSchema: { type: "object", properties: { color: { type: "string" } }, required: ["color"] }
        }))
        return `${answerField(name, "name")} likes ${answerField(colour, "color")}`
      }).pipe(reported("test_input_required_result_multi_round"))),
    Tool.add("test_input_required_result_tampered_state", {
      description: "Asks for a confirmation; a retry with an altered requestState is refused"
    }, (_, ctx) =>
      ctx.elicit({ message: "Confirm?", requestedSchema: { type: "object", properties: { ok: { type: "boolean" } } } }).pipe(
        Effect.map((a) => `confirmed: ${a.action}`),
        reported("test_input_required_result_tampered_state")
      )),
    Tool.add("test_input_required_result_capabilities", {
      description: "Asks only through the capabilities the request declares (elicitation, sampling)"
    }, (_, ctx) => {
      const declared = ctx.session.clientCapabilities
      const asks: Array<Effect.Effect<string, McpServer.ClientCallError>> = []
      if (declared.elicitation !== undefined) asks.push(Effect.map(ctx.elicit(NAME_FORM), (a) => `name ${answerField(a, "name")}`))
      if (declared.sampling !== undefined) asks.push(Effect.map(ctx.sample(GREETING_REQUEST), (r) => `LLM ${sampleText(r)}`))
      return Effect.all(asks, { concurrency: "unbounded" }).pipe(
        Effect.map((parts) => (parts.length === 0 ? "nothing to ask" : parts.join("; "))),
        reported("test_input_required_result_capabilities")
      )
    }),
    Tool.add("test_missing_capability", {
      description: "Needs the sampling capability: without it the call fails with -32021"
    }, (_, ctx) =>
      ctx.sample(GREETING_REQUEST).pipe(
        Effect.map((r) => `LLM said: ${sampleText(r)}`),
        reported("test_missing_capability")
      )),
    Tool.add("test_streaming_elicitation", {
      description: "Reports progress, then asks for a name (stateless era: an input_required result, never a request)"
    }, (_, ctx) =>
      Effect.gen(function*() {
        yield* ctx.progress(0, { total: 1, message: "asking for a name" })
        const answer = yield* ctx.elicit(NAME_FORM)
        return `Hello, ${answerField(answer, "name")}!`
      }).pipe(reported("test_streaming_elicitation"))),
    Tool.add("test_logging_tool", {
      description: "Logs at info level while it runs (sent only to a request that set a log level)"
    }, (_, ctx) =>
      Effect.gen(function*() {
        yield* ctx.log("info", "Logging tool started")
        yield* ctx.log("warning", "Logging tool halfway")
        yield* ctx.log("info", "Logging tool finished")
        return "Logging tool completed"
      }).pipe(reported("test_logging_tool"))),
    Tool.add("test_trigger_tool_change", {
      description: "Adds or removes test_dynamic_tool and announces the tool list change"
    }, () =>
      Effect.gen(function*() {
        const definitions = yield* LiveDefinitions
        // The change announces itself (notifications/tools/list_changed).
        yield* Effect.orDie(dynamicTool ? definitions.remove("tool", "test_dynamic_tool") : definitions.add(dynamicToolStep))
        dynamicTool = !dynamicTool
        return `test_dynamic_tool ${dynamicTool ? "added" : "removed"}`
      })),
    Tool.add("test_trigger_prompt_change", {
      description: "Adds or removes test_dynamic_prompt and announces the prompt list change"
    }, () =>
      Effect.gen(function*() {
        const definitions = yield* LiveDefinitions
        yield* Effect.orDie(
          dynamicPrompt ? definitions.remove("prompt", "test_dynamic_prompt") : definitions.add(dynamicPromptStep)
        )
        dynamicPrompt = !dynamicPrompt
        return `test_dynamic_prompt ${dynamicPrompt ? "added" : "removed"}`
      })),
    Tool.add("test_header_param", {
      description: "Echoes its region, which an HTTP client also sends as the Mcp-Param-Region header",
      parameters: { region: Schema.String.annotate({ description: "Where to run", ...JsonSchema.header("Region") }) }
    }, ({ region }) => Effect.succeed(`region: ${region}`))
  )

// ---------------------------------------------------------------------------
// Resources and prompts

/** Bumped by the server every `watchedInterval`; subscribers hear of each change. */
let watchedVersion = 0

/** Resource subscriptions, per session (the key "" stands for no session). */
const subscriptions = new Map<string, Set<string>>()
const subsOf = (sessionId: string | undefined) => {
  const key = sessionId ?? ""
  let set = subscriptions.get(key)
  if (set === undefined) subscriptions.set(key, set = new Set())
  return set
}

/** Candidate values of a completion that start with what was typed. */
const startingWith = (values: ReadonlyArray<string>) => (typed: string) =>
  Effect.succeed(values.filter((v) => v.startsWith(typed)))

const resources = <R>(server: McpServer.McpServer<R>) =>
  server.pipe(
    Resource.add("test://static-text", {
      name: "static-text",
      description: "A static text resource",
      mimeType: "text/plain"
    }, () => Effect.succeed("This is the content of the static text resource.")),
    Resource.add("test://static-binary", { name: "static-binary", description: "A static PNG", mimeType: "image/png" }, () =>
      Effect.succeed(new Uint8Array(Buffer.from(PNG, "base64")))),
    Resource.add(WATCHED, {
      name: "watched-resource",
      description: "Subscribe to hear of its changes",
      mimeType: "text/plain"
    }, () => Effect.sync(() => `Watched resource content, version ${watchedVersion}.`)),
    // The embedded resources point at it: readable, not listed.
    Resource.add(EMBEDDED, { mimeType: "text/plain", listed: false }, () => Effect.succeed("This is an embedded resource content.")),
    Resource.template("test://template/{id}/data", {
      name: "template-data",
      description: "JSON data for an id",
      mimeType: "application/json",
      complete: { id: startingWith(["1", "42", "123"]) }
    }, ({ id }) => Effect.succeed(JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }))),
    Resource.subscriptions({
      subscribe: (uri, ctx) => Effect.sync(() => void subsOf(ctx.sessionId).add(uri)),
      unsubscribe: (uri, ctx) => Effect.sync(() => void subsOf(ctx.sessionId).delete(uri))
    })
  )

const user = (content: { readonly type: string; readonly [key: string]: unknown }) => ({ role: "user" as const, content })

const prompts = <R>(server: McpServer.McpServer<R>) =>
  server.pipe(
    Prompt.add("test_simple_prompt", { description: "A prompt without arguments" }, () =>
      Effect.succeed("This is a simple prompt for testing.")),
    Prompt.add("test_prompt_with_arguments", {
      description: "A prompt with two arguments",
      arguments: {
        arg1: Schema.String.annotate({ description: "First test argument" }),
        arg2: Schema.String.annotate({ description: "Second test argument" })
      },
      complete: { arg1: startingWith(["test", "testing", "tested", "other"]), arg2: startingWith(["world", "wide", "web"]) }
    }, ({ arg1, arg2 }) => Effect.succeed(`Prompt with arguments: arg1='${arg1}', arg2='${arg2}'`)),
    Prompt.add("test_prompt_with_embedded_resource", {
      description: "A prompt that embeds a resource",
      arguments: { resourceUri: Schema.String.annotate({ description: "URI of the resource to embed" }) },
      complete: { resourceUri: startingWith(["test://static-text", "test://static-binary", WATCHED]) }
    }, ({ resourceUri }) =>
      Effect.succeed({
        messages: [
          user({ type: "resource", resource: { uri: resourceUri, mimeType: "text/plain", text: "Embedded resource content for testing." } }),
          user(text("Please process the embedded resource above."))
        ]
      })),
    Prompt.add("test_prompt_with_image", { description: "A prompt with an image" }, () =>
      Effect.succeed({
        messages: [user({ type: "image", data: PNG, mimeType: "image/png" }), user(text("Please analyze the image above."))]
      })),
    Prompt.add("test_input_required_result_prompt", { description: "A prompt that first asks the user for context" }, (_, ctx) =>
      Effect.map(
        ctx.elicit({
          message: "What context should the prompt use?",
          requestedSchema: { type: "object", properties: { context: { type: "string" } }, required: ["context"] }
        }),
        (answer) => `Use this context: ${answerField(answer, "context")}`
      ))
  )

// ---------------------------------------------------------------------------
// The server

// ---------------------------------------------------------------------------
// Tasks (io.modelcontextprotocol/tasks): the fixtures the suite's tasks-* scenarios call

const CONFIRM_FORM = {
  message: "Delete the file?",
  requestedSchema: { type: "object", properties: { confirm: { type: "boolean" } }, required: ["confirm"] }
} as const

const taskTools = <R>(server: McpServer.McpServer<R>) =>
  server.pipe(
    Tool.add("greet", {
      description: "Greets by name, at once (never a task)",
      parameters: { name: Schema.String }
    }, ({ name }) => Effect.succeed(`Hello, ${name}!`)),
    Tool.add("slow_compute", {
      description: "Sleeps the given seconds, then answers (a task when the client runs tasks)",
      parameters: { seconds: Schema.Number, label: Schema.optionalKey(Schema.String) },
      taskSupport: "optional"
    }, ({ seconds, label }, ctx) =>
      Effect.gen(function*() {
        yield* ctx.progress(0, { total: 1, message: `computing ${label ?? ""}`.trim() })
        yield* Effect.sleep(Duration.seconds(seconds))
        return `Computed ${label ?? "result"} after ${seconds}s`
      })),
    Tool.add("failing_job", {
      description: "Reports a tool error after about a second; runs only as a task",
      taskSupport: "required"
    }, () => Effect.as(Effect.sleep("1 second"), { isError: true, content: [text("The job failed")] })),
    Tool.add("protocol_error_job", {
      description: "Fails with a JSON-RPC error (the task fails)",
      taskSupport: "optional"
    }, () => Effect.fail(new RpcError({ code: -32603, rpcMessage: "The job hit an internal error" }))),
    Tool.add("confirm_delete", {
      description: "Asks the client to confirm, then deletes (pretends to)",
      parameters: { filename: Schema.String },
      taskSupport: "optional"
    }, ({ filename }, ctx) =>
      Effect.map(ctx.elicit({ ...CONFIRM_FORM, message: `Delete ${filename}?` }), (answer) =>
        answer.action === "accept" && answer.content?.confirm === true ? `Deleted ${filename}` : `Kept ${filename}`)),
    Tool.add("multi_input", {
      description: "Asks two questions at once, then answers with both",
      taskSupport: "optional"
    }, (_, ctx) =>
      Effect.all([ctx.elicit(NAME_FORM), ctx.elicit({ ...NAME_FORM, message: "And your friend's name?" })], { concurrency: 2 }).pipe(
        Effect.map(([a, b]) => `Names: ${answerField(a, "name")}, ${answerField(b, "name")}`)
      )),
    Tool.add("test_tool_with_task", {
      description: "Asks for a name in input_required rounds, then greets from a task",
      taskSupport: "required",
      taskStart: "escalate"
    }, (_, ctx) =>
      Effect.gen(function*() {
        const answer = yield* McpServer.inputKey("user_name")(ctx.elicit(NAME_FORM))
        const name = answerField(answer, "name")
        return yield* Task.escalate(ctx, () => Effect.as(Effect.sleep("200 millis"), `Hello, ${name}!`))
      }))
  )

export const definition = McpServer.make({
  serverInfo: { name: "effect-mcp-transport-everything", version: "0.1.0" },
  // Both eras: the handshake (2025-11-25 and before) and the stateless era (2026-07-28).
  stateless: true,
  instructions: "The conformance suite's example server, built on effect-mcp-transport.",
  // The trigger tools change both lists and announce it.
  capabilities: { tools: { listChanged: true }, prompts: { listChanged: true } }
}).pipe(contentTools, statelessTools, taskTools, resources, prompts)

export interface ServerOptions {
  readonly host?: string | undefined
  readonly port?: number | undefined
  /** How often `test://watched-resource` changes (default 10 s). */
  readonly watchedInterval?: Duration.Input | undefined
}

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
    const serve = <A, E>(effect: Effect.Effect<A, E, TransportCall | LiveDefinitions>, context: HandlerContext) =>
      effect.pipe(Effect.provideService(TransportCall, context), Effect.provideService(LiveDefinitions, handle.definitions))
    const schemaOf = handle.handler.toolInputSchema
    // The wrapper keeps what the transport reads off the handler: the eras it serves, the tool
    // schemas behind the Mcp-Param-* header checks, and the end of open subscriptions.
    const handler: Handler = Object.assign(
      (message: Parameters<Handler>[0], context: HandlerContext) =>
        serve(handle.handler(message, context), context),
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

