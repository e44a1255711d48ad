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
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import * as AiTool from "effect/ai/Tool"
import type * as Toolkit from "effect/ai/Toolkit"
import * as JsonRpc from "../JsonRpc.ts"
import { RpcError } from "../McpError.ts"
import * as RequestMeta from "../RequestMeta.ts"
import { DefinitionError } from "./DefinitionError.ts"
import * as Catalogue from "./internal/Catalogue.ts"
import * as TaskMethods2025 from "./internal/TaskMethods2025.ts"
import * as TaskRunner from "./internal/TaskRunner.ts"
import * as JsonSchema from "./JsonSchema.ts"
import type { ClientCallError, McpServer, RequestContext } from "./McpServer.ts"
import type * as Task from "./Task.ts"

/**
 * The behaviour hints of a tool (MCP `ToolAnnotations`); a client may show
 * them, never trust them.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolAnnotations {
  readonly title?: string | undefined
  /** The tool does not change its environment. */
  readonly readOnlyHint?: boolean | undefined
  /** The tool may destroy or overwrite (meaningful when not read-only). */
  readonly destructiveHint?: boolean | undefined
  /** Calling it again with the same arguments changes nothing more. */
  readonly idempotentHint?: boolean | undefined
  /** The tool reaches outside a closed world (the web, other systems). */
  readonly openWorldHint?: boolean | undefined
}

/**
 * One block of a tool result's `content`, as MCP sends it (`text`, `image`,
 * `audio`, `resource_link`, `resource`).
 *
 * @since 0.1.0
 * @category models
 */
export interface ContentBlock {
  readonly type: string
  readonly [key: string]: unknown
}

/**
 * What a handler of a tool with no `success` Schema returns: a string (sent
 * as one text block) or a whole `CallToolResult`.
 *
 * @since 0.1.0
 * @category models
 */
export type ToolResult = string | {
  readonly content: ReadonlyArray<ContentBlock>
  readonly structuredContent?: { readonly [key: string]: unknown } | undefined
  readonly isError?: boolean | undefined
  readonly _meta?: { readonly [key: string]: unknown } | undefined
}

/**
 * The parameters of a tool: the fields of its arguments object, or a Schema
 * whose JSON form is an object.
 *
 * @since 0.1.0
 * @category models
 */
export type Parameters = Schema.Struct.Fields | Schema.Top

/**
 * The Schema of `Parameters`.
 *
 * @since 0.1.0
 * @category models
 */
export type ParametersSchema<P extends Parameters> = P extends Schema.Top ? P
  : P extends Schema.Struct.Fields ? Schema.Struct<P>
  : never

/**
 * How a tool is described and checked.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolOptions<P extends Parameters, S extends Schema.Top, F extends Schema.Top> {
  /** What the tool does, for the model. Default: none. */
  readonly description?: string | undefined
  /** A name for people. Default: none. */
  readonly title?: string | undefined
  /**
   * The arguments: struct fields (`{ a: Schema.Number }`) or a Schema with an
   * object root. Default: no arguments. Mark a parameter with
   * `JsonSchema.header(name)` to have stateless-era HTTP clients mirror it
   * into `Mcp-Param-{name}`.
   */
  readonly parameters?: P | undefined
  /**
   * The result's Schema. Given: the handler returns its type, sent as
   * `structuredContent` (wrapped as `{ result }` when its JSON form is not an
   * object) with a text copy, and listed as `outputSchema`. Default: the
   * handler returns a `ToolResult`.
   */
  readonly success?: S | undefined
  /**
   * The text copy of a typed result (with `success` only), for clients that
   * read text. Default: the result's JSON, as MCP recommends.
   */
  readonly text?: ((value: S["Type"]) => string) | undefined
  /**
   * The Schema of the failures that are answers, not faults: a handler
   * failure it accepts is sent as a tool error with its JSON as text.
   * Default: none (every failure but `RpcError` is -32603).
   */
  readonly failure?: F | undefined
  /** Behaviour hints. Default: none. */
  readonly annotations?: ToolAnnotations | undefined
  /** Sent as the tool's `_meta`. Default: none. */
  readonly _meta?: { readonly [key: string]: unknown } | undefined
  /** Numbers may be non-finite (see `JsonSchema.JsonSchemaOptions`). Default `false`. */
  readonly nonFinite?: boolean | undefined
  /**
   * Whether a call may run as a task (tasks extension): `"forbidden"`
   * (default) never; `"optional"` when the client declared the extension,
   * inline otherwise; `"required"` only as a task (a client that did not
   * declare the extension gets -32021). Listed as `execution.taskSupport`
   * in the handshake era.
   */
  readonly taskSupport?: Task.TaskSupport | undefined
  /**
   * When a call of a task tool becomes a task: `"call"` (default) the whole
   * handler runs as one; `"escalate"` the handler runs in the request (it
   * may ask the client through `input_required` rounds first) and turns its
   * rest into a task with `Task.escalate`.
   */
  readonly taskStart?: "call" | "escalate" | undefined
}

/**
 * What a tool's handler succeeds with: `success`'s type, or a `ToolResult` without one.
 *
 * @since 0.1.0
 * @category models
 */
export type Success<S extends Schema.Top> = [S] extends [never] ? ToolResult : S["Type"]

/**
 * What a tool's handler may fail with: a value of its `failure` Schema (sent as a tool error), an
 * `RpcError` (sent as that JSON-RPC error), or what asking the client failed with (`ClientCallError`:
 * a capability the client did not declare is sent as -32021 naming it, the rest as -32603). Anything
 * else is a fault: map it to a declared failure, or make it a defect (`Effect.orDie`, answered -32603
 * without details) on purpose.
 *
 * @since 0.1.0
 * @category models
 */
export type Failure<F extends Schema.Top> = RpcError | ClientCallError | F["Type"]

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const isEmptyStruct = (ast: SchemaAST.AST) =>
  SchemaAST.isObjects(ast) && ast.encoding === undefined && ast.propertySignatures.length === 0 &&
  ast.indexSignatures.length === 0

const asText = (encoded: unknown): string => (typeof encoded === "string" ? encoded : JSON.stringify(encoded))

const errorResult = (text: string) => ({ isError: true, content: [{ type: "text", text }] })

const badResult = (name: string) =>
  new RpcError({
    code: JsonRpc.ErrorCode.InternalError,
    rpcMessage: `Internal error: the result of tool ${JSON.stringify(name)} does not match its success schema`
  })

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
  // Effect reads an empty struct as "any value but null"; a tool without arguments takes an empty object.
  const inputSchema = isEmptyStruct(parameters.ast) ? { type: "object", properties: {} } : JsonSchema.make(parameters, jsonOptions)
  if (inputSchema.type !== "object") {
    throw new DefinitionError({
      kind: "tool",
      name,
      reason: `has parameters whose JSON Schema is not an object (type: ${JSON.stringify(inputSchema.type)}): use struct fields or a Schema.Struct`
    })
  }
  const headers = RequestMeta.headerParams(inputSchema)
  if (headers._tag === "Invalid") throw new DefinitionError({ kind: "tool", name, reason: `has an invalid ${headers.reason}` })

  let outputSchema: JsonSchema.JsonSchemaObject | undefined
  let wrap = false
  if (options.success !== undefined) {
    const { $defs, ...schema } = JsonSchema.make(options.success, jsonOptions)
    wrap = schema.type !== "object"
    outputSchema = wrap
      ? { type: "object", properties: { result: schema }, required: ["result"], ...($defs === undefined ? {} : { $defs }) }
      : { ...schema, ...($defs === undefined ? {} : { $defs }) }
  }

  const definition = listed(name, options, inputSchema, outputSchema)
  if (options.taskSupport !== undefined) definition.execution = { taskSupport: options.taskSupport }

  const decodeArguments = Schema.decodeUnknownEffect(JsonSchema.codec(parameters, jsonOptions))
  const encodeSuccess = options.success === undefined
    ? undefined
    : Schema.encodeUnknownEffect(JsonSchema.codec(options.success, jsonOptions))
  const isFailure = options.failure === undefined ? undefined : Schema.is(options.failure)
  const encodeFailure = options.failure === undefined
    ? undefined
    : Schema.encodeUnknownEffect(JsonSchema.codec(options.failure, jsonOptions))

  // Schema parsers without async steps answer with an Exit: the eager combinators then skip the fiber's
  // continuations, which is most of a call's cost for a small tool.
  const toStructured = (encoded: unknown, value: unknown) => ({
    content: [{ type: "text", text: options.text === undefined ? asText(encoded) : options.text(value as never) }],
    structuredContent: wrap || !isRecord(encoded) ? { result: encoded } : encoded
  })
  const invalidResult = () => badResult(name)
  const toResult = (value: unknown): Effect.Effect<Record<string, unknown>, RpcError, any> => {
    if (encodeSuccess === undefined) {
      return Effect.succeed(typeof value === "string" ? { content: [{ type: "text", text: value }] } : value as Record<string, unknown>)
    }
    return Effect.mapBothEager(encodeSuccess(value), {
      onFailure: invalidResult,
      onSuccess: (encoded) => toStructured(encoded, value)
    })
  }

  const catchFailure = isFailure === undefined || encodeFailure === undefined
    ? undefined
    : Effect.catchIf(isFailure, (failure) =>
      encodeFailure(failure).pipe(
        Effect.mapError(invalidResult),
        Effect.map((encoded) => errorResult(asText(encoded)))
      ))

  const finish = (effect: Effect.Effect<unknown, unknown, any>): Effect.Effect<Record<string, unknown>, unknown, any> => {
    const result = Effect.flatMapEager(effect, toResult)
    return catchFailure === undefined ? result : catchFailure(result)
  }
  const taskSupport = options.taskSupport ?? "forbidden"
  const escalates = taskSupport !== "forbidden" && options.taskStart === "escalate"
  // Called inside the router's `Effect.suspend` (or a continuation): a handler that throws is a defect either way.
  const runInline = (params: unknown, context: RequestContext): Effect.Effect<Record<string, unknown>, unknown, any> =>
    escalates
      ? TaskRunner.catchEscalation(Effect.provideService(finish(handler(params as never, context)), TaskRunner.CurrentFinish, finish))
      : finish(handler(params as never, context))
  const runExtension = taskSupport === "forbidden"
    ? runInline
    : escalates
    ? (params: unknown, context: RequestContext) =>
      Effect.flatMap(TaskRunner.CurrentRunner, (runner: TaskRunner.Runner | undefined) =>
        taskSupport === "required" && (runner === undefined || !TaskRunner.declaresTasks(context))
          ? Effect.fail(TaskRunner.missingExtension())
          : runInline(params, context))
    : (params: unknown, context: RequestContext) =>
      TaskRunner.offer(taskSupport, (c) => runInline(params, c), context)
  // A session of the 2025-11-25 tasks asks for a task with `params.task` (the server provides what it asked).
  const run = (params: unknown, context: RequestContext): Effect.Effect<Record<string, unknown>, unknown, any> =>
    Effect.withFiber((fiber) => {
      const augmentation = fiber.getRef(TaskMethods2025.CurrentAugmentation)
      const runner = fiber.getRef(TaskRunner.CurrentRunner)
      return augmentation === undefined || runner === undefined
        ? runExtension(params, context)
        : TaskMethods2025.offer(
          runner,
          taskSupport,
          augmentation,
          (c) => runInline(params, c),
          runExtension(params, context),
          context
        )
    })

  const call = (args: unknown, context: RequestContext): Effect.Effect<Record<string, unknown>, unknown, any> => {
    const decoded = decodeArguments(args)
    if (Exit.isExit(decoded) && Exit.isSuccess(decoded)) return run(decoded.value, context)
    return Effect.matchEffect(decoded, {
      onFailure: (error) => Effect.succeed(errorResult(`Invalid arguments for tool ${JSON.stringify(name)}: ${error.message}`)),
      onSuccess: (params) => run(params, context)
    })
  }

  return Catalogue.add(server, "tools", name, { definition, call }) as McpServer<any>
}

/**
 * How a tool defined by JSON Schema documents is described.
 *
 * @since 0.1.0
 * @category models
 */
export interface JsonSchemaToolOptions {
  /** What the tool does, for the model. Default: none. */
  readonly description?: string | undefined
  /** A name for people. Default: none. */
  readonly title?: string | undefined
  /**
   * The arguments' JSON Schema, listed exactly as given (any dialect and
   * keyword: `$schema`, `$defs`, `$anchor`, `if`/`then`/`else`…). Its root
   * must be `type: "object"`. It is not checked against the arguments.
   */
  readonly inputSchema: JsonSchema.JsonSchemaObject
  /**
   * The JSON Schema of the result's `structuredContent`, listed exactly as
   * given; its root must be `type: "object"`. The handler's results are
   * not checked against it. Default: none.
   */
  readonly outputSchema?: JsonSchema.JsonSchemaObject | undefined
  /** Behaviour hints. Default: none. */
  readonly annotations?: ToolAnnotations | undefined
  /** Sent as the tool's `_meta`. Default: none. */
  readonly _meta?: { readonly [key: string]: unknown } | undefined
}

/** The tool as `tools/list` shows it: optional members only when given. */
const listed = (
  name: string,
  options: {
    readonly title?: string | undefined
    readonly description?: string | undefined
    readonly annotations?: unknown
    readonly _meta?: unknown
  },
  inputSchema: unknown,
  outputSchema: unknown
): Record<string, unknown> => ({
  name,
  ...(options.title === undefined ? {} : { title: options.title }),
  ...(options.description === undefined ? {} : { description: options.description }),
  inputSchema,
  ...(outputSchema === undefined ? {} : { outputSchema }),
  ...(options.annotations === undefined ? {} : { annotations: options.annotations }),
  ...(options._meta === undefined ? {} : { _meta: options._meta })
})

const objectRoot = (name: string, which: string, schema: unknown): JsonSchema.JsonSchemaObject => {
  if (!isRecord(schema) || schema.type !== "object") {
    throw new DefinitionError({ kind: "tool", name, reason: `has an ${which} whose root is not { "type": "object" }` })
  }
  // A copy: a later change to the caller's object must not change what is listed.
  return structuredClone(schema)
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
  const inputSchema = objectRoot(name, "inputSchema", options.inputSchema)
  const outputSchema = options.outputSchema === undefined ? undefined : objectRoot(name, "outputSchema", options.outputSchema)
  const headers = RequestMeta.headerParams(inputSchema)
  if (headers._tag === "Invalid") throw new DefinitionError({ kind: "tool", name, reason: `has an invalid ${headers.reason}` })
  const definition = listed(name, options, inputSchema, outputSchema)
  const call = (args: unknown, context: RequestContext): Effect.Effect<Record<string, unknown>, unknown, R2> => {
    if (!isRecord(args)) {
      return Effect.succeed(errorResult(`Invalid arguments for tool ${JSON.stringify(name)}: expected an object`))
    }
    return Effect.map(handler(args, context), (result) =>
      typeof result === "string" ? { content: [{ type: "text", text: result }] } : result as Record<string, unknown>)
  }
  return Catalogue.add(server, "tools", name, { definition, call }) as McpServer<R | R2>
}

/**
 * The services an `effect/ai` toolkit's tools need when served: the
 * handlers (`toolkit.toLayer(...)`), the dependencies the tools declare and
 * the services of their Schemas.
 *
 * @since 0.1.0
 * @category models
 */
export type ToolkitServices<Tools extends Record<string, AiTool.Any>> =
  | AiTool.HandlersFor<Tools>
  | { readonly [K in keyof Tools]: AiTool.HandlerServices<Tools[K]> }[keyof Tools]

const isVoidSchema = (schema: Schema.Top) => SchemaAST.isVoid(schema.ast) || SchemaAST.isUndefined(schema.ast)

const isNeverSchema = (schema: Schema.Top) => SchemaAST.isNever(schema.ast)

/** An annotation the tool sets itself: the ai hints are references with defaults, and only the chosen ones are sent. */
const annotation = <A>(tool: AiTool.Any, key: Context.Key<any, A>): A | undefined =>
  tool.annotations.mapUnsafe.has(key.key) ? tool.annotations.mapUnsafe.get(key.key) as A : undefined

const annotationsOf = (tool: AiTool.Any): ToolAnnotations | undefined => {
  const hints: Record<string, string | boolean> = {}
  const set = (name: keyof ToolAnnotations, value: string | boolean | undefined) => {
    if (value !== undefined) hints[name] = value
  }
  set("title", annotation(tool, AiTool.Title))
  set("readOnlyHint", annotation(tool, AiTool.Readonly))
  set("destructiveHint", annotation(tool, AiTool.Destructive))
  set("idempotentHint", annotation(tool, AiTool.Idempotent))
  set("openWorldHint", annotation(tool, AiTool.OpenWorld))
  return Object.keys(hints).length === 0 ? undefined : hints
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
    if (AiTool.isProviderDefined(tool)) {
      throw new DefinitionError({ kind: "tool", name: tool.name, reason: "is provider-defined: its model provider runs it, not a server" })
    }
    if (!Schema.isSchema(tool.parametersSchema)) {
      throw new DefinitionError({ kind: "tool", name: tool.name, reason: "has parameters given as a JSON Schema: give a Schema to serve it" })
    }
    const voidSuccess = isVoidSchema(tool.successSchema)
    const handler = (params: unknown, context: RequestContext): Effect.Effect<any, unknown, any> =>
      Effect.flatMap(Effect.context<never>(), (services) => {
        const entry = services.mapUnsafe.get(tool.id) as AiTool.Handler<string> | undefined
        if (entry === undefined) return Effect.die(`no handler for the tool ${JSON.stringify(tool.name)}: provide the toolkit's layer`)
        const run = entry.handler(params, { toolCallId: String(context.requestId), preliminary: () => Effect.void }).pipe(
          // The layer's services are the handler's defaults; the call's own services (per request) win.
          Effect.updateContext((input: Context.Context<never>) => Context.merge(entry.context, input))
        )
        return voidSuccess ? Effect.as(run, { content: [] }) : run
      })
    const meta = annotation(tool, AiTool.Meta)
    out = add(tool.name, {
      description: AiTool.getDescription(tool),
      title: annotation(tool, AiTool.Title),
      parameters: tool.parametersSchema,
      success: voidSuccess ? undefined : tool.successSchema,
      failure: isNeverSchema(tool.failureSchema) ? undefined : tool.failureSchema,
      annotations: annotationsOf(tool),
      _meta: meta
    }, handler)(out)
  }
  return out
}
