/**
 * Tools defined from Effect Schemas. `Tool.add` registers a tool on a
 * server definition: its `inputSchema` (and `outputSchema` when it declares
 * a `success` Schema) are generated as JSON Schema 2020-12 (see
 * `JsonSchema`), `tools/list` lists it and `tools/call` dispatches to it by
 * name. Arguments are decoded before the handler runs; arguments that do not
 * decode are answered with a tool error (`isError: true`) that tells the
 * model what to fix. A typed result is encoded (and so checked) by
 * `success` and sent as `structuredContent` with a text copy; a failure the
 * `failure` Schema accepts is sent as a tool error. `fromToolkit` serves
 * the tools of an `effect/ai` `Toolkit` the same way; `addJsonSchema`
 * serves a tool described by hand-written JSON Schema next to them.
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as AiTool from "effect/ai/Tool"
import type * as Toolkit from "effect/ai/Toolkit"
import * as Catalogue from "./internal/Catalogue.ts"
import * as ToolCall from "./internal/ToolCall.ts"
import * as ToolkitTools from "./internal/ToolkitTools.ts"
import type { ToolkitServices } from "./internal/ToolkitTools.ts"
import * as ToolListing from "./internal/ToolListing.ts"
import type {
  Failure,
  JsonSchemaToolOptions,
  Parameters,
  ParametersSchema,
  Success,
  ToolOptions,
  ToolResult
} from "./internal/ToolShape.ts"
import type { McpServer, RequestContext } from "./McpServer.ts"

export type { ToolkitServices } from "./internal/ToolkitTools.ts"
export type {
  ContentBlock,
  Failure,
  JsonSchemaToolOptions,
  Parameters,
  ParametersSchema,
  Success,
  ToolAnnotations,
  ToolOptions,
  ToolResult
} from "./internal/ToolShape.ts"

/**
 * Registers a tool. Throws `DefinitionError` when the server already has a
 * tool of that name, when the parameters' JSON form is not an object, or
 * when an `x-mcp-header` annotation is not one MCP allows.
 *
 * The handler's failures: one the `failure` Schema accepts → a tool error
 * result; `RpcError` → that error reply; anything else → -32603 with no
 * details. An unknown tool name → -32602.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import * as Schema from "effect/Schema"
 * import * as McpServer from "effect-mcp-transport/server/McpServer"
 * import * as Tool from "effect-mcp-transport/server/Tool"
 *
 * class DivisionByZero extends Schema.TaggedError<DivisionByZero>()("DivisionByZero", {}) {}
 *
 * const server = McpServer.make({ serverInfo: { name: "calc", version: "1.0.0" } }).pipe(
 *   Tool.add("divide", {
 *     description: "Divides a by b",
 *     parameters: { a: Schema.Number, b: Schema.Number.annotate({ description: "not 0" }) },
 *     success: Schema.Struct({ quotient: Schema.Number }),
 *     failure: DivisionByZero,
 *     annotations: { readOnlyHint: true }
 *   }, ({ a, b }) => b === 0 ? Effect.fail(new DivisionByZero()) : Effect.succeed({ quotient: a / b }))
 * )
 * ```
 *
 * @since 0.1.0
 * @category definitions
 */
export const add = <
  const P extends Parameters = {},
  S extends Schema.Top = never,
  F extends Schema.Top = never,
  E extends Failure<F> = never,
  R2 = never
>(
  name: string,
  options: ToolOptions<P, S, F>,
  handler: (params: ParametersSchema<P>["Type"], context: RequestContext) => Effect.Effect<Success<S>, E, R2>
) =>
<R>(
  server: McpServer<R>
): McpServer<R | R2 | ParametersSchema<P>["DecodingServices"] | S["EncodingServices"] | F["EncodingServices"]> => {
  const jsonOptions = { nonFinite: options.nonFinite }
  const parameters: Schema.Top = options.parameters === undefined
    ? Schema.Struct({})
    : Schema.isSchema(options.parameters)
    ? options.parameters
    : Schema.Struct(options.parameters as Schema.Struct.Fields)
  const { inputSchema, outputSchema, wrap } = ToolListing.fromSchemas(name, parameters, options.success, jsonOptions)
  const definition = ToolListing.listed(name, options, inputSchema, outputSchema)
  if (options.taskSupport !== undefined) definition.execution = { taskSupport: options.taskSupport }
  const call = ToolCall.fromSchemas(name, options, parameters, wrap, jsonOptions, handler)
  return Catalogue.add(server, "tools", name, { definition, call }) as McpServer<any>
}

/**
 * Registers a tool described by hand-written JSON Schema documents, next to
 * the tools of `add` (same table, same `tools/list` and `tools/call`).
 * `inputSchema` and `outputSchema` are listed exactly as given. The handler
 * gets the call's `arguments` object as the client sent it, not validated
 * against `inputSchema` (decode it yourself, e.g. with
 * `Schema.decodeUnknownEffect`); arguments that are not an object are
 * answered with a tool error before it runs. It returns a `ToolResult`
 * (a string is one text block). Its failures: `RpcError` → that error
 * reply; anything else → -32603 with no details.
 *
 * Throws `DefinitionError` when the server already has a tool of that name
 * (from `add` or `addJsonSchema`), when a schema's root is not
 * `type: "object"`, or when an `x-mcp-header` annotation is not one MCP
 * allows.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import * as McpServer from "effect-mcp-transport/server/McpServer"
 * import * as Tool from "effect-mcp-transport/server/Tool"
 *
 * const server = McpServer.make({ serverInfo: { name: "contacts", version: "1.0.0" } }).pipe(
 *   Tool.addJsonSchema("save_contact", {
 *     inputSchema: {
 *       $schema: "https://json-schema.org/draft/2020-12/schema",
 *       type: "object",
 *       properties: { name: { type: "string" }, phone: { type: "string" }, email: { type: "string" } },
 *       if: { required: ["phone"] },
 *       then: { properties: { phone: { pattern: "^[0-9+ ]+$" } } },
 *       else: { required: ["email"] }
 *     }
 *   }, (args) => Effect.succeed(`saved ${JSON.stringify(args.name)}`))
 * )
 * ```
 *
 * @since 0.1.0
 * @category definitions
 */
export const addJsonSchema = <E = never, R2 = never>(
  name: string,
  options: JsonSchemaToolOptions,
  handler: (args: { readonly [key: string]: unknown }, context: RequestContext) => Effect.Effect<ToolResult, E, R2>
) =>
<R>(server: McpServer<R>): McpServer<R | R2> => {
  const inputSchema = ToolListing.objectRoot(name, "inputSchema", options.inputSchema)
  const outputSchema = options.outputSchema === undefined ? undefined : ToolListing.objectRoot(name, "outputSchema", options.outputSchema)
  ToolListing.checkHeaders(name, inputSchema)
  const definition = ToolListing.listed(name, options, inputSchema, outputSchema)
  const call = ToolCall.fromJsonSchema(name, handler)
  return Catalogue.add(server, "tools", name, { definition, call }) as McpServer<R | R2>
}

/**
 * Registers every tool of an `effect/ai` `Toolkit` as an MCP tool, through
 * `add`: the tool's name, description (`Tool.getDescription`), parameters,
 * success and failure Schemas become the MCP tool's, and its `Title`,
 * `Readonly`, `Destructive`, `Idempotent` and `OpenWorld` annotations the
 * MCP `title` and hints (only those the tool sets; `Meta` is its `_meta`).
 * A tool whose success Schema is `Void` (the ai default) answers an empty
 * `content` and lists no `outputSchema`.
 *
 * Each call runs the handler that `toolkit.toLayer(...)` registered, so the
 * server needs that layer (and the tools' declared dependencies) when it
 * runs. The handler's `preliminary` results are not sent; its
 * `toolCallId` is the JSON-RPC request id. Throws `DefinitionError` for a
 * provider-defined tool (the model provider runs it) and for a dynamic tool
 * whose parameters are a raw JSON Schema, as well as for everything `add`
 * rejects.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import * as Schema from "effect/Schema"
 * import { Tool as AiTool, Toolkit } from "effect/ai"
 * import * as McpServer from "effect-mcp-transport/server/McpServer"
 * import * as Tool from "effect-mcp-transport/server/Tool"
 *
 * const Echo = AiTool.make("echo", { parameters: Schema.Struct({ text: Schema.String }), success: Schema.String })
 * const tools = Toolkit.make(Echo)
 *
 * const server = McpServer.make({ serverInfo: { name: "echo", version: "1.0.0" } }).pipe(Tool.fromToolkit(tools))
 * const handlers = tools.toLayer({ echo: ({ text }) => Effect.succeed(text) })
 * ```
 *
 * @since 0.1.0
 * @category definitions
 */
export const fromToolkit = <Tools extends Record<string, AiTool.Any>>(toolkit: Toolkit.Toolkit<Tools>) =>
<R>(server: McpServer<R>): McpServer<R | ToolkitServices<Tools>> => {
  let out: McpServer<any> = server
  for (const tool of Object.values(toolkit.tools) as Array<AiTool.Any>) {
    const { handler, options } = ToolkitTools.served(tool)
    out = add(tool.name, options, handler)(out)
  }
  return out
}
