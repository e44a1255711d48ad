/**
 * The tools of MCP servers as an `effect/ai` toolkit, so that a
 * `LanguageModel` can call them: each server tool becomes a dynamic tool
 * (its `inputSchema` passed to the model as JSON Schema, its arguments
 * handed to the server as they come), and each call the model makes is a
 * `tools/call` through our client or manager.
 *
 * What the model sees: a successful call's content blocks (text as text,
 * images, audio and binary resources as files); a failed one, as a failure
 * result (`ToolFailure`): the tool's own error (`isError`), or the call that
 * could not complete (timeout, lost connection, unknown tool, server down),
 * named and explained. Failures never fail the model call: the model reads
 * them and decides what to do. Interrupting the model call interrupts the
 * tool calls in flight, which cancels them at the server.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as JsonSchema from "effect/JsonSchema"
import type * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type * as McpSchema from "effect/ai/McpSchema"
import type * as Prompt from "effect/ai/Prompt"
import * as Tool from "effect/ai/Tool"
import * as Toolkit from "effect/ai/Toolkit"
import type * as McpClient from "./McpClient.ts"
import type * as McpManager from "./McpManager.ts"
import { reasonOf } from "../McpErrorGroup.ts"
import * as ToolModelOutput from "./internal/ToolModelOutput.ts"

// ---------------------------------------------------------------------------
// Schemas and models

/**
 * What a successful MCP tool call returns to the application: the result's
 * content blocks and its structured content. The model is sent the content
 * blocks as text and file parts (see `toModelOutput`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolResult = Schema.Struct({
  content: Schema.Array(Schema.Unknown),
  structuredContent: Schema.optionalKey(Schema.Unknown)
})

/**
 * A successful MCP tool call's result.
 *
 * @since 0.1.0
 * @category models
 */
export type ToolResult = typeof ToolResult.Type

/**
 * Why an MCP tool call failed, as the model reads it.
 *
 * - `"tool-error"`: the tool ran and reported an error (`isError: true`);
 *   `message` is the text of its content, `content` the blocks themselves.
 * - `"call-failed"`: the call did not complete (timeout, lost connection,
 *   protocol error, unknown tool, server unavailable); `error` is our typed
 *   error's tag and `message` its message.
 * - `"invalid-arguments"`: the model's arguments were not a JSON object;
 *   nothing was sent.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolFailure = Schema.Struct({
  _tag: Schema.Literal("McpToolFailure"),
  kind: Schema.Literals(["tool-error", "call-failed", "invalid-arguments"]),
  /** The tool's name at its server. */
  tool: Schema.String,
  /** The server, for a toolkit built from a manager. */
  server: Schema.optionalKey(Schema.String),
  message: Schema.String,
  /** `"call-failed"`: the tag of the error that ended the call (e.g. `RequestTimeout`). */
  error: Schema.optionalKey(Schema.String),
  /** `"tool-error"`: the content blocks of the tool's error result. */
  content: Schema.optionalKey(Schema.Array(Schema.Unknown))
})

/**
 * A failed MCP tool call, as the model reads it.
 *
 * @since 0.1.0
 * @category models
 */
export type ToolFailure = typeof ToolFailure.Type

/**
 * One MCP tool as an `effect/ai` tool: parameters are the server's JSON
 * Schema (decoded as `unknown`), failures are returned to the model.
 *
 * @since 0.1.0
 * @category models
 */
export type McpTool = Tool.Dynamic<string, {
  readonly parameters: JsonSchema.JsonSchema
  readonly success: typeof ToolResult
  readonly failure: typeof ToolFailure
  readonly failureMode: "return"
}>

/**
 * The tools of a toolkit built here, by the name the model sees.
 *
 * @since 0.1.0
 * @category models
 */
export type McpTools = Record<string, McpTool>

/**
 * Where a toolkit tool comes from: the server (for a manager's toolkit) and
 * the tool's name there. Every tool built here carries it as an annotation.
 *
 * @since 0.1.0
 * @category annotations
 */
export class McpOrigin extends Context.Service<McpOrigin, {
  readonly server: string | undefined
  readonly tool: string
}>()("effect-mcp-transport/AiToolkit/McpOrigin") {}

/**
 * Where a tool built here comes from (its `McpOrigin`); `undefined` for any other tool.
 *
 * @since 0.1.0
 * @category getters
 */
export const originOf = (tool: Tool.Any): McpOrigin["Service"] | undefined => {
  const origin = Context.getOption(tool.annotations as Context.Context<McpOrigin>, McpOrigin)
  return origin._tag === "Some" ? origin.value : undefined
}

/**
 * A progress notification of a tool call the model made.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolProgress {
  /** The name the model called. */
  readonly name: string
  readonly server: string | undefined
  /** The tool's name at its server. */
  readonly tool: string
  /** The model's id for the call. */
  readonly toolCallId: string | undefined
  readonly progress: McpClient.Progress
}

/**
 * What `toolName` is given to choose the name the model sees.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolNaming {
  /** The default name before cleaning: the tool's name, or `<server><separator><tool>` for a manager. */
  readonly name: string
  readonly server: string | undefined
  readonly tool: McpSchema.Tool
}

/**
 * Options of every toolkit built here.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolkitOptions {
  /**
   * The name the model sees for a tool. Default: `modelName(naming.name)`,
   * the tool's name (a manager's `<server>__<tool>`) with every character
   * providers refuse replaced by `_`. A name still not of 1–64 letters,
   * digits, `_` or `-`, or taken by an earlier tool, leaves the tool out
   * (with a warning in the log).
   */
  readonly toolName?: ((naming: ToolNaming) => string) | undefined
  /** Which tools to offer (default: all). */
  readonly filter?: ((tool: McpSchema.Tool, server: string | undefined) => boolean) | undefined
  /** Sees each progress notification of a tool call the model made (default: none). */
  readonly onProgress?: ((progress: ToolProgress) => Effect.Effect<void>) | undefined
  /** Timeouts of each `tools/call` (default: the client's). */
  readonly callOptions?: Omit<McpClient.CallOptions, "onProgress"> | undefined
}

// ---------------------------------------------------------------------------
// Names

const PROVIDER_NAME = /^[a-zA-Z0-9_-]{1,64}$/

/**
 * A tool name providers accept: characters other than letters, digits, `_`
 * and `-` become `_` (MCP allows `.` and `/`, most model APIs do not).
 *
 * @since 0.1.0
 * @category utils
 */
export const modelName = (name: string): string => name.replace(/[^a-zA-Z0-9_-]/g, "_")

// ---------------------------------------------------------------------------
// What the model sees

/**
 * The parts the model is sent for a successful call: each content block
 * (text as text; images, audio and binary resources as files; resource
 * links as their name and URI), or the structured content as JSON when
 * there are no blocks.
 *
 * @since 0.1.0
 * @category utils
 */
export const toModelOutput: (result: ToolResult) => ReadonlyArray<Prompt.ToolModelOutputPart> =
  ToolModelOutput.toModelOutput

// ---------------------------------------------------------------------------
// Building

/** One tool to offer: its name for the model and how a call reaches its server. */
interface Entry {
  readonly name: string
  readonly server: string | undefined
  readonly tool: McpSchema.Tool
  readonly call: (
    args: Readonly<Record<string, unknown>>,
    options: McpClient.CallOptions | undefined
  ) => Effect.Effect<McpSchema.CallToolResult, { readonly _tag: string; readonly message: string }>
}

const makeTool = (entry: Entry): McpTool => {
  let tool = Tool.dynamic(entry.name, {
    description: entry.tool.description ?? entry.tool.title ?? entry.tool.annotations?.title,
    parameters: entry.tool.inputSchema as JsonSchema.JsonSchema,
    success: ToolResult,
    failure: ToolFailure,
    failureMode: "return",
    toModelOutput
  })
    // The schema is the server's: strict mode would make providers reject schemas it does not fit.
    .annotate(Tool.Strict, false)
    .annotate(McpOrigin, { server: entry.server, tool: entry.tool.name })
  const hints = entry.tool.annotations
  const title = entry.tool.title ?? hints?.title
  if (title !== undefined) tool = tool.annotate(Tool.Title, title)
  if (hints !== undefined) {
    tool = tool
      .annotate(Tool.Readonly, hints.readOnlyHint ?? false)
      .annotate(Tool.Destructive, hints.destructiveHint ?? true)
      .annotate(Tool.Idempotent, hints.idempotentHint ?? false)
      .annotate(Tool.OpenWorld, hints.openWorldHint ?? true)
  }
  return tool as McpTool
}

const failure = (entry: Entry, fields: Omit<ToolFailure, "_tag" | "tool" | "server">): ToolFailure => ({
  _tag: "McpToolFailure",
  tool: entry.tool.name,
  ...(entry.server === undefined ? {} : { server: entry.server }),
  ...fields
})

const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

const makeHandler = (entry: Entry, options: ToolkitOptions) =>
(
  params: unknown,
  context: { readonly toolCallId?: string | undefined }
): Effect.Effect<ToolResult, ToolFailure> => {
  // Models send `{}` as nothing at all, or `null`, for tools without parameters.
  const args = params === undefined || params === null ? {} : params
  if (!isRecord(args)) {
    return Effect.fail(failure(entry, {
      kind: "invalid-arguments",
      message: `The arguments of ${entry.name} must be a JSON object`
    }))
  }
  const onProgress = options.onProgress
  const callOptions: McpClient.CallOptions | undefined = onProgress === undefined
    ? options.callOptions
    : {
      ...options.callOptions,
      onProgress: (progress) =>
        onProgress({ name: entry.name, server: entry.server, tool: entry.tool.name, toolCallId: context.toolCallId, progress })
    }
  return entry.call(args, callOptions).pipe(
    // The model is told the reason (`RequestTimeout`…), not its group.
    Effect.mapError((error) =>
      failure(entry, { kind: "call-failed", error: (reasonOf(error) as { readonly _tag: string })._tag, message: error.message })
    ),
    Effect.flatMap((result) =>
      result.isError === true
        ? Effect.fail(failure(entry, { kind: "tool-error", message: ToolModelOutput.contentText(result.content), content: result.content }))
        : Effect.succeed(
          result.structuredContent === undefined
            ? { content: result.content }
            : { content: result.content, structuredContent: result.structuredContent }
        )
    )
  )
}

/** The entries the model may see: named, filtered, invalid and taken names left out. */
const select = (
  candidates: ReadonlyArray<Omit<Entry, "name"> & { readonly defaultName: string }>,
  options: ToolkitOptions
): Effect.Effect<Array<Entry>> =>
  Effect.gen(function*() {
    const entries: Array<Entry> = []
    const taken = new Set<string>()
    const left: Array<string> = []
    for (const c of candidates) {
      if (options.filter !== undefined && !options.filter(c.tool, c.server)) continue
      const name = options.toolName === undefined
        ? modelName(c.defaultName)
        : options.toolName({ name: c.defaultName, server: c.server, tool: c.tool })
      if (!PROVIDER_NAME.test(name) || taken.has(name)) {
        left.push(`${c.defaultName} (as "${name}")`)
        continue
      }
      taken.add(name)
      entries.push({ name, server: c.server, tool: c.tool, call: c.call })
    }
    if (left.length > 0) {
      yield* Effect.logWarning("MCP tools left out of the toolkit: names providers refuse, or taken", left)
    }
    return entries
  })

const withHandlers = (entries: ReadonlyArray<Entry>, options: ToolkitOptions) =>
  Effect.gen(function*() {
    const toolkit = Toolkit.make(...entries.map(makeTool)) as unknown as Toolkit.Toolkit<McpTools>
    const handlers: Record<string, ReturnType<typeof makeHandler>> = {}
    for (const entry of entries) handlers[entry.name] = makeHandler(entry, options)
    const context = yield* toolkit.toHandlers(handlers as never)
    return yield* Effect.provideContext(toolkit, context)
  })

const clientEntries = (client: McpClient.McpClientShape, tools: ReadonlyArray<McpSchema.Tool>) =>
  tools.map((tool) => ({
    defaultName: tool.name,
    server: undefined,
    tool,
    call: (args: Readonly<Record<string, unknown>>, o: McpClient.CallOptions | undefined) =>
      client.callTool({ name: tool.name, arguments: args }, o)
  }))

// ---------------------------------------------------------------------------
// From one client

/**
 * The server's tools, listed now, as a `Toolkit` (no handlers yet: see
 * `toLayer`, or `make` for both at once). A server without the tools
 * capability has none.
 *
 * @since 0.1.0
 * @category constructors
 */
export const toolkit = (
  client: McpClient.McpClientShape,
  options: ToolkitOptions = {}
): Effect.Effect<Toolkit.Toolkit<McpTools>, McpClient.McpClientError> =>
  Effect.gen(function*() {
    const tools = client.serverCapabilities.tools === undefined ? [] : yield* client.listAllTools()
    const entries = yield* select(clientEntries(client, tools), options)
    return Toolkit.make(...entries.map(makeTool)) as unknown as Toolkit.Toolkit<McpTools>
  })

/**
 * The handlers of a toolkit made by `toolkit`: each calls its tool on
 * `client` (found by the tool's `McpOrigin`). Tools of the toolkit that
 * did not come from here get no handler.
 *
 * @since 0.1.0
 * @category layers
 */
export const toLayer = (
  toolkit: Toolkit.Toolkit<McpTools>,
  client: McpClient.McpClientShape,
  options: ToolkitOptions = {}
): Layer.Layer<Tool.HandlersFor<McpTools>> => {
  const handlers: Record<string, ReturnType<typeof makeHandler>> = {}
  for (const [name, tool] of Object.entries(toolkit.tools)) {
    const origin = originOf(tool)
    if (origin === undefined) continue
    handlers[name] = makeHandler({
      name,
      server: undefined,
      tool: { name: origin.tool } as McpSchema.Tool,
      call: (args, o) => client.callTool({ name: origin.tool, arguments: args }, o)
    }, options)
  }
  return toolkit.toLayer(handlers as never)
}

/**
 * The server's tools, listed now, with their handlers: pass it as
 * `toolkit` to `LanguageModel.generateText` or `streamText`. Make it again
 * (each turn, or on the client's `listChanged`) to offer a changed listing.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import { LanguageModel } from "effect/ai"
 * import * as AiToolkit from "effect-mcp-transport/client/AiToolkit"
 * import type * as McpClient from "effect-mcp-transport/client/McpClient"
 *
 * const ask = (client: McpClient.McpClientShape, question: string) =>
 *   Effect.gen(function*() {
 *     const toolkit = yield* AiToolkit.make(client, {
 *       onProgress: (p) => Effect.log(`${p.name}: ${p.progress.progress}/${p.progress.total ?? "?"}`)
 *     })
 *     const response = yield* LanguageModel.generateText({ prompt: question, toolkit })
 *     return response.toolResults
 *   })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  client: McpClient.McpClientShape,
  options: ToolkitOptions = {}
): Effect.Effect<Toolkit.WithHandler<McpTools>, McpClient.McpClientError> =>
  Effect.gen(function*() {
    const tools = client.serverCapabilities.tools === undefined ? [] : yield* client.listAllTools()
    return yield* withHandlers(yield* select(clientEntries(client, tools), options), options)
  })

// ---------------------------------------------------------------------------
// From a manager

/**
 * Whether a server in this status offers its tools: `Ready`, or
 * `Connecting` (a call waits for the connection, up to the manager's
 * `callWaitTimeout`). A server that is down (`Reconnecting`, `Degraded`,
 * `Expired`, `CircuitOpen`, `Failed`, `Closed`) offers none, so the model
 * is never offered a tool that would only fail.
 *
 * @since 0.1.0
 * @category utils
 */
export const offersTools = (status: McpManager.ServerStatus | undefined): boolean =>
  status !== undefined && (status._tag === "Ready" || status._tag === "Connecting")

/**
 * The tools of every server of the manager that is up (see `offersTools`),
 * named `<server>__<tool>` (the manager's `toolSeparator`), with their
 * handlers, which route through the manager.
 *
 * The returned effect reads the manager's listings each time it runs, and
 * `LanguageModel` runs it at each `generateText`/`streamText`: each turn
 * sees the servers' current tools, including listings refreshed after
 * `notifications/tools/list_changed` and servers that came up or went down.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import { LanguageModel } from "effect/ai"
 * import * as AiToolkit from "effect-mcp-transport/client/AiToolkit"
 * import * as McpManager from "effect-mcp-transport/client/McpManager"
 *
 * const ask = (question: string) =>
 *   Effect.gen(function*() {
 *     const manager = yield* McpManager.McpManager
 *     const response = yield* LanguageModel.generateText({
 *       prompt: question,
 *       toolkit: AiToolkit.fromManager(manager)
 *     })
 *     return response.text
 *   })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromManager = (
  manager: McpManager.McpManagerShape,
  options: ToolkitOptions = {}
): Effect.Effect<Toolkit.WithHandler<McpTools>> =>
  Effect.gen(function*() {
    const statuses = yield* manager.statuses
    const tools = (yield* manager.tools).filter((t) => offersTools(statuses[t.server]))
    const candidates = tools.map((t) => ({
      defaultName: t.name,
      server: t.server,
      tool: t.tool,
      call: (args: Readonly<Record<string, unknown>>, o: McpClient.CallOptions | undefined) =>
        manager.callTool(t.name, args, o)
    }))
    return yield* withHandlers(yield* select(candidates, options), options)
  })
