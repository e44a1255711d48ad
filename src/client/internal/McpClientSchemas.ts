/**
 * Everything `McpClient` decodes with Schema: results, server notifications
 * and the params of the server's requests. `LazySchemas` loads this module
 * when a client is made, not when `McpClient` is imported, so that
 * `effect/Schema` and `effect/ai/McpSchema` (together ~95 ms of import) load
 * while the server starts and answers `initialize`.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import * as McpSchema from "effect/ai/McpSchema"
import { decode as decodeNotification } from "../ServerNotification.ts"
import * as JsonRpc from "../../JsonRpc.ts"
import { InvalidPayload, RpcError } from "../../McpError.ts"
import * as FastResult from "./FastResult.ts"

export { decodeNotification, McpSchema }

/** A result decoder: `fast` answers the common shapes without the Schema (see FastResult), the Schema the rest. */
export const decodeResult = <A>(method: string, schema: Schema.Decoder<A>, fast?: (raw: unknown) => A | undefined) => {
  const decode = Schema.decodeUnknownEffect(schema)
  const slow = (raw: unknown): Effect.Effect<A, InvalidPayload> =>
    decode(raw).pipe(Effect.mapError((e) => new InvalidPayload({ method, kind: "result", reason: e.message })))
  if (fast === undefined) return slow
  return (raw: unknown): Effect.Effect<A, InvalidPayload> => {
    const value = fast(raw)
    return value === undefined ? slow(raw) : Exit.succeed(value)
  }
}

const EmptyResult = Schema.Struct({})

export const decodeInitialize = decodeResult("initialize", McpSchema.InitializeResult)

/** The typed methods' result decoders, by method. */
export const results = {
  listTools: decodeResult("tools/list", McpSchema.ListToolsResult),
  listResources: decodeResult("resources/list", McpSchema.ListResourcesResult),
  listResourceTemplates: decodeResult("resources/templates/list", McpSchema.ListResourceTemplatesResult),
  listPrompts: decodeResult("prompts/list", McpSchema.ListPromptsResult),
  callTool: decodeResult("tools/call", McpSchema.CallToolResult, FastResult.callToolResult),
  readResource: decodeResult("resources/read", McpSchema.ReadResourceResult),
  subscribe: decodeResult("resources/subscribe", EmptyResult, FastResult.emptyResult),
  unsubscribe: decodeResult("resources/unsubscribe", EmptyResult, FastResult.emptyResult),
  getPrompt: decodeResult("prompts/get", McpSchema.GetPromptResult),
  complete: decodeResult("completion/complete", McpSchema.CompleteResult),
  setLevel: decodeResult("logging/setLevel", EmptyResult, FastResult.emptyResult),
  ping: decodeResult("ping", EmptyResult, FastResult.emptyResult)
}

const invalidParams = (method: string) => (error: Schema.SchemaError) =>
  new RpcError({ code: JsonRpc.ErrorCode.InvalidParams, rpcMessage: `Invalid params: ${error.message}`, method })

const SamplingParams = Schema.Struct(McpSchema.CreateMessage.payloadSchema.fields)
const ElicitParams = Schema.Struct({
  mode: Schema.optionalKey(Schema.Literals(["form", "url"])),
  message: Schema.String,
  requestedSchema: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown)),
  url: Schema.optionalKey(Schema.String),
  elicitationId: Schema.optionalKey(Schema.String),
  _meta: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
})
const decodeSampling = Schema.decodeUnknownEffect(SamplingParams)
const decodeElicit = Schema.decodeUnknownEffect(ElicitParams)

/** Params of `sampling/createMessage`; invalid → -32602. */
export const samplingParams = (
  params: unknown
): Effect.Effect<typeof McpSchema.CreateMessage.payloadSchema.Type, RpcError> =>
  Effect.mapError(decodeSampling(params), invalidParams("sampling/createMessage"))

/** Params of `elicitation/create`; invalid → -32602. */
export const elicitParams = (params: unknown): Effect.Effect<typeof ElicitParams.Type, RpcError> =>
  Effect.mapError(decodeElicit(params), invalidParams("elicitation/create"))
