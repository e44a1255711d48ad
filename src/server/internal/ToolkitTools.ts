/**
 * The tools of an `effect/ai` `Toolkit` as MCP tools: for each, the options
 * `Tool.add` takes (description, Schemas, hints) and a handler that runs the
 * one `toolkit.toLayer(...)` registered. `Tool.fromToolkit` registers them.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import * as AiTool from "effect/ai/Tool"
import { DefinitionError } from "../DefinitionError.ts"
import type { RequestContext } from "../McpServer.ts"
import type { ToolAnnotations } from "./ToolShape.ts"

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
 * What `Tool.add` needs to serve `tool`. Throws `DefinitionError` for a
 * provider-defined tool (the model provider runs it) and for a dynamic tool
 * whose parameters are a raw JSON Schema.
 */
export const served = (tool: AiTool.Any) => {
  if (AiTool.isProviderDefined(tool)) {
    throw new DefinitionError({ kind: "tool", name: tool.name, reason: "is provider-defined: its model provider runs it, not a server" })
  }
  if (!Schema.isSchema(tool.parametersSchema)) {
    throw new DefinitionError({ kind: "tool", name: tool.name, reason: "has parameters given as a JSON Schema: give a Schema to serve it" })
  }
  const voidSuccess = isVoidSchema(tool.successSchema)
  // The layer's services are the handler's defaults; the call's own services (per request) win. Merging
  // copies both contexts, and calls usually run with one and the same context (the transport's services,
  // when nothing is traced): the last merge is kept for them.
  let mergedEntry: AiTool.Handler<string> | undefined
  let mergedInput: Context.Context<never> | undefined
  let merged: Context.Context<never> | undefined
  const withDefaults = (entry: AiTool.Handler<string>, input: Context.Context<never>): Context.Context<never> => {
    if (merged === undefined || entry !== mergedEntry || input !== mergedInput) {
      mergedEntry = entry
      mergedInput = input
      merged = Context.merge(entry.context, input)
    }
    return merged
  }
  const handler = (params: unknown, context: RequestContext): Effect.Effect<any, unknown, any> =>
    Effect.flatMap(Effect.context<never>(), (services) => {
      const entry = services.mapUnsafe.get(tool.id) as AiTool.Handler<string> | undefined
      if (entry === undefined) return Effect.die(`no handler for the tool ${JSON.stringify(tool.name)}: provide the toolkit's layer`)
      const run = entry.handler(params, { toolCallId: String(context.requestId), preliminary: () => Effect.void }).pipe(
        Effect.updateContext((input: Context.Context<never>) => withDefaults(entry, input))
      )
      return voidSuccess ? Effect.as(run, { content: [] }) : run
    })
  const meta = annotation(tool, AiTool.Meta)
  const options = {
    description: AiTool.getDescription(tool),
    title: annotation(tool, AiTool.Title),
    parameters: tool.parametersSchema,
    success: voidSuccess ? undefined : tool.successSchema,
    failure: isNeverSchema(tool.failureSchema) ? undefined : tool.failureSchema,
    annotations: annotationsOf(tool),
    _meta: meta
  }
  return { options, handler }
}
