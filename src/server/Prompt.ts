/**
 * Prompts defined from Effect Schemas: `Prompt.add` registers a prompt
 * whose arguments (strings on the wire) are decoded by their Schemas before
 * the handler runs; `prompts/list` lists them with the descriptions and
 * optionality the Schemas carry, `prompts/get` dispatches by name, and
 * arguments can offer completions (`completion/complete`).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import * as JsonRpc from "../JsonRpc.ts"
import { RpcError } from "../McpError.ts"
import * as CompiledDecode from "../internal/CompiledDecode.ts"
import * as Catalogue from "./internal/Catalogue.ts"
import type { McpServer, RequestContext } from "./McpServer.ts"

/**
 * One message of a prompt, as MCP sends it.
 *
 * @since 0.1.0
 * @category models
 */
export interface PromptMessage {
  readonly role: "user" | "assistant"
  readonly content: { readonly type: string; readonly [key: string]: unknown }
}

/**
 * What a prompt handler returns: a string (one user message) or a whole `GetPromptResult`.
 *
 * @since 0.1.0
 * @category models
 */
export type PromptResult = string | {
  readonly description?: string | undefined
  readonly messages: ReadonlyArray<PromptMessage>
}

/**
 * The arguments of a prompt: struct fields whose encoded side is a string.
 * An `optionalKey` field is an optional argument.
 *
 * @since 0.1.0
 * @category models
 */
export type Arguments = { readonly [name: string]: Schema.Codec<any, string, any, any> | Schema.Top }

/**
 * How a prompt is described, decoded and completed.
 *
 * @since 0.1.0
 * @category models
 */
export interface PromptOptions<A extends Arguments, RC> {
  /** Default: none. */
  readonly title?: string | undefined
  /** Default: none. */
  readonly description?: string | undefined
  /** The arguments, each described by its Schema's `description` annotation. Default: none. */
  readonly arguments?: A | undefined
  /** Completions for arguments, keyed by name. Default: none. */
  readonly complete?: { readonly [K in keyof A]?: Catalogue.Completer<RC> } | undefined
  /** Sent as the prompt's `_meta`. Default: none. */
  readonly _meta?: { readonly [key: string]: unknown } | undefined
}

/**
 * Registers a prompt. Arguments that do not decode are answered -32602 with
 * the decoder's message; an unknown prompt name, -32602. Throws
 * `DefinitionError` when the server already has a prompt of that name.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import * as Schema from "effect/Schema"
 * import * as McpServer from "effect-mcp-transport/server/McpServer"
 * import * as Prompt from "effect-mcp-transport/server/Prompt"
 *
 * const server = McpServer.make({ serverInfo: { name: "prompts", version: "1.0.0" } }).pipe(
 *   Prompt.add("review", {
 *     description: "Reviews code in a language",
 *     arguments: {
 *       language: Schema.Literals(["ts", "rust"]).annotate({ description: "the language" }),
 *       strict: Schema.optionalKey(Schema.BooleanFromString)
 *     },
 *     complete: { language: (typed) => Effect.succeed(["ts", "rust"].filter((l) => l.startsWith(typed))) }
 *   }, ({ language, strict }) => Effect.succeed(`Review this ${language} code${strict ? " strictly" : ""}.`))
 * )
 * ```
 *
 * @since 0.1.0
 * @category definitions
 */
export const add = <const A extends Arguments = {}, E = never, R2 = never, RC = never>(
  name: string,
  options: PromptOptions<A, RC>,
  handler: (args: Schema.Struct<A>["Type"], context: RequestContext) => Effect.Effect<PromptResult, E, R2>
) =>
<R>(server: McpServer<R>): McpServer<R | R2 | RC | Schema.Struct<A>["DecodingServices"]> => {
  const schema = Schema.Struct((options.arguments ?? {}) as A)
  const args = schema.ast.propertySignatures.map((p) => {
    const description = SchemaAST.resolveDescription(p.type)
    return {
      name: String(p.name),
      ...(description === undefined ? {} : { description }),
      required: !SchemaAST.isOptional(p.type)
    }
  })
  const definition: Record<string, unknown> = {
    name,
    ...(options.title === undefined ? {} : { title: options.title }),
    ...(options.description === undefined ? {} : { description: options.description }),
    arguments: args,
    ...(options._meta === undefined ? {} : { _meta: options._meta })
  }
  const decode = CompiledDecode.decodeUnknownEffect(schema as unknown as Schema.Decoder<unknown, never>)
  return Catalogue.add(server, "prompts", name, {
    definition,
    complete: (options.complete ?? {}) as Record<string, Catalogue.Completer<RC>>,
    get: (raw, context) =>
      decode(raw).pipe(
        Effect.mapError((error) =>
          new RpcError({
            code: JsonRpc.ErrorCode.InvalidParams,
            rpcMessage: `Invalid arguments for prompt ${JSON.stringify(name)}: ${error.message}`
          })
        ),
        Effect.flatMap((decoded) => Effect.suspend(() => handler(decoded as Schema.Struct<A>["Type"], context))),
        Effect.map((result): Record<string, unknown> =>
          typeof result === "string"
            ? { messages: [{ role: "user", content: { type: "text", text: result } }] }
            : result as Record<string, unknown>
        )
      )
  }) as McpServer<any>
}
