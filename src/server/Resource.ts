/**
 * Resources defined by URI or by URI template. `Resource.add` serves one
 * fixed URI, `Resource.template` every URI an RFC 6570 template (level 1,
 * plus `{+var}` and `{#var}`) expands to, with its variables decoded by
 * Schemas before the handler runs. `resources/list`,
 * `resources/templates/list` and `resources/read` dispatch by URI (fixed
 * URIs first, then templates in the order they were added); a URI nothing
 * names is -32002. Contents are text (a string) or binary (a `Uint8Array`,
 * sent base64). Variables can offer completions (`completion/complete`), and
 * `Resource.subscriptions` hooks `resources/subscribe` and `unsubscribe`.
 *
 * @since 0.1.0
 */
import { Buffer } from "node:buffer"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { DefinitionError } from "./DefinitionError.ts"
import * as CompiledDecode from "../internal/CompiledDecode.ts"
import * as Catalogue from "./internal/Catalogue.ts"
import * as UriTemplate from "./internal/UriTemplate.ts"
import type { McpServer, RequestContext } from "./McpServer.ts"

/**
 * One content item: text, or bytes. `uri` defaults to the URI read, and
 * `mimeType` to the resource's.
 *
 * @since 0.1.0
 * @category models
 */
export type ContentItem =
  | { readonly text: string; readonly mimeType?: string | undefined; readonly uri?: string | undefined }
  | { readonly blob: Uint8Array; readonly mimeType?: string | undefined; readonly uri?: string | undefined }

/**
 * What a resource handler returns: a string (text), a `Uint8Array` (binary), one item or several.
 *
 * @since 0.1.0
 * @category models
 */
export type Contents = string | Uint8Array | ContentItem | ReadonlyArray<ContentItem>

/**
 * What a resource says about itself in the lists.
 *
 * @since 0.1.0
 * @category models
 */
export interface ResourceOptions {
  /** The resource's name (MCP requires one). Default: the URI or template. */
  readonly name?: string | undefined
  /** A name for people. Default: none. */
  readonly title?: string | undefined
  /** Default: none. */
  readonly description?: string | undefined
  /** The type of the contents, also their default `mimeType`. Default: none. */
  readonly mimeType?: string | undefined
  /** MCP resource annotations (`audience`, `priority`, `lastModified`). Default: none. */
  readonly annotations?: { readonly [key: string]: unknown } | undefined
  /** Sent as the entry's `_meta`. Default: none. */
  readonly _meta?: { readonly [key: string]: unknown } | undefined
}

/**
 * How a resource at a fixed URI is described.
 *
 * @since 0.1.0
 * @category models
 */
export interface FixedResourceOptions extends ResourceOptions {
  /**
   * `false`: readable by its URI (and subscribable) but left out of
   * `resources/list`, e.g. a resource only tool results or other resources
   * point at. Default `true`.
   */
  readonly listed?: boolean | undefined
}

/**
 * A value that completes an argument or a variable: the values to offer for
 * what the user typed so far, given the other arguments already chosen. At
 * most 100 are sent (`total` and `hasMore` say how many there were).
 *
 * @since 0.1.0
 * @category models
 */
export type Completer<R = never> = Catalogue.Completer<R>

type Strip<E extends string> = E extends `+${infer N}` | `#${infer N}` ? N : E

/**
 * The variable names of a URI template, as a union of string literals.
 *
 * @since 0.1.0
 * @category models
 */
export type Variables<T extends string> = T extends `${string}{${infer E}}${infer Rest}` ? Strip<E> | Variables<Rest>
  : never

/**
 * A Schema that decodes a variable from its string.
 *
 * @since 0.1.0
 * @category models
 */
export type VariableSchema = Schema.Codec<any, string, any, any>

/**
 * The Schemas of a template's variables (those left out are strings).
 *
 * @since 0.1.0
 * @category models
 */
export type VariableSchemas<T extends string> = { readonly [K in Variables<T>]?: VariableSchema }

/**
 * The decoded variables a template handler receives.
 *
 * @since 0.1.0
 * @category models
 */
export type DecodedVariables<T extends string, V> = {
  readonly [K in Variables<T>]: K extends keyof V ? V[K] extends Schema.Top ? V[K]["Type"] : string : string
}

/**
 * How a resource template is described, decoded and completed.
 *
 * @since 0.1.0
 * @category models
 */
export interface TemplateOptions<T extends string, V extends VariableSchemas<T>, RC> extends ResourceOptions {
  /** The Schemas of the variables, keyed by name. Default: every variable is a string. */
  readonly variables?: V | undefined
  /** Completions for variables, keyed by name. Default: none. */
  readonly complete?: { readonly [K in Variables<T>]?: Completer<RC> } | undefined
}

const listEntry = (key: "uri" | "uriTemplate", value: string, options: ResourceOptions): Record<string, unknown> => ({
  [key]: value,
  name: options.name ?? value,
  ...(options.title === undefined ? {} : { title: options.title }),
  ...(options.description === undefined ? {} : { description: options.description }),
  ...(options.mimeType === undefined ? {} : { mimeType: options.mimeType }),
  ...(options.annotations === undefined ? {} : { annotations: options.annotations }),
  ...(options._meta === undefined ? {} : { _meta: options._meta })
})

const toContents = (contents: Contents, uri: string, mimeType: string | undefined): ReadonlyArray<Record<string, unknown>> => {
  const item = (c: ContentItem | string | Uint8Array): Record<string, unknown> => {
    const one: ContentItem = typeof c === "string" ? { text: c } : c instanceof Uint8Array ? { blob: c } : c
    const type = one.mimeType ?? mimeType
    const base = { uri: one.uri ?? uri, ...(type === undefined ? {} : { mimeType: type }) }
    return "text" in one
      ? { ...base, text: one.text }
      : { ...base, blob: Buffer.from(one.blob.buffer, one.blob.byteOffset, one.blob.byteLength).toString("base64") }
  }
  return Array.isArray(contents) ? contents.map(item) : [item(contents as ContentItem | string | Uint8Array)]
}

/**
 * Registers a resource at a fixed URI; `listed: false` keeps it out of
 * `resources/list` while it stays readable. Throws `DefinitionError` when
 * the server already has a resource at that URI.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import * as McpServer from "effect-mcp-transport/server/McpServer"
 * import * as Resource from "effect-mcp-transport/server/Resource"
 *
 * const server = McpServer.make({ serverInfo: { name: "docs", version: "1.0.0" } }).pipe(
 *   Resource.add("docs://readme", { mimeType: "text/markdown" }, () => Effect.succeed("# Hello")),
 *   Resource.add("docs://logo", { mimeType: "image/png" }, () => Effect.succeed(new Uint8Array([137, 80, 78, 71])))
 * )
 * ```
 *
 * @since 0.1.0
 * @category definitions
 */
export const add = <E = never, R2 = never>(
  uri: string,
  options: FixedResourceOptions,
  handler: (uri: string, context: RequestContext) => Effect.Effect<Contents, E, R2>
) =>
<R>(server: McpServer<R>): McpServer<R | R2> =>
  Catalogue.add(server, "resources", uri, {
    definition: listEntry("uri", uri, options),
    listed: options.listed !== false,
    read: (read, context) =>
      Effect.map(Effect.suspend(() => handler(read, context)), (c) => toContents(c, read, options.mimeType))
  }) as McpServer<R | R2>

/**
 * Registers a resource template. The handler gets the variables decoded by
 * their Schemas (strings where none is given); a URI that matches the
 * template but whose variables do not decode is not this template's (the
 * next template is tried, then -32002 with the decoder's reasons). Throws
 * `DefinitionError` for a template given twice or one with an expression
 * other than `{name}`, `{+name}` and `{#name}`.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import * as Schema from "effect/Schema"
 * import * as McpServer from "effect-mcp-transport/server/McpServer"
 * import * as Resource from "effect-mcp-transport/server/Resource"
 *
 * const users = ["ada", "alan", "grace"]
 * const server = McpServer.make({ serverInfo: { name: "users", version: "1.0.0" } }).pipe(
 *   Resource.template("users://{id}/profile", {
 *     mimeType: "application/json",
 *     variables: { id: Schema.NumberFromString },
 *     complete: { id: (typed) => Effect.succeed(["0", "1", "2"].filter((id) => id.startsWith(typed))) }
 *   }, ({ id }) => Effect.succeed(JSON.stringify({ id, name: users[id] ?? null })))
 * )
 * ```
 *
 * @since 0.1.0
 * @category definitions
 */
export const template = <
  const T extends string,
  const V extends VariableSchemas<T> = {},
  E = never,
  R2 = never,
  RC = never
>(
  uriTemplate: T,
  options: TemplateOptions<T, V, RC>,
  handler: (variables: DecodedVariables<T, V>, uri: string, context: RequestContext) => Effect.Effect<Contents, E, R2>
) =>
<R>(server: McpServer<R>): McpServer<R | R2 | RC> => {
  const parsed = UriTemplate.parse(uriTemplate)
  if (typeof parsed === "string") throw new DefinitionError({ kind: "resourceTemplate", name: uriTemplate, reason: parsed })
  const schemas = (options.variables ?? {}) as Record<string, VariableSchema>
  const fields: Record<string, Schema.Top> = {}
  for (const name of parsed.variables) fields[name] = schemas[name] ?? Schema.String
  const decode = CompiledDecode.decodeUnknownEffect(Schema.Struct(fields) as unknown as Schema.Decoder<unknown, never>)
  return Catalogue.add(server, "templates", uriTemplate, {
    definition: listEntry("uriTemplate", uriTemplate, options),
    template: parsed,
    complete: (options.complete ?? {}) as Record<string, Completer<RC>>,
    read: (variables, uri, context) =>
      decode(variables).pipe(
        Effect.matchEffect({
          onFailure: (error) => Effect.succeed(`${uriTemplate}: ${error.message}`),
          onSuccess: (decoded) =>
            Effect.map(
              Effect.suspend(() => handler(decoded as DecodedVariables<T, V>, uri, context)),
              (c) => toContents(c, uri, options.mimeType)
            )
        })
      )
  }) as McpServer<R | R2 | RC>
}

/**
 * The hooks of `resources/subscribe` and `resources/unsubscribe` (handshake
 * era; the stateless era subscribes through `subscriptions/listen`).
 *
 * @since 0.1.0
 * @category models
 */
export interface SubscriptionHooks<R> {
  /** The client wants `notifications/resources/updated` for `uri` (publish them with `handle.notifyAll`). */
  readonly subscribe: (uri: string, context: RequestContext) => Effect.Effect<void, unknown, R>
  readonly unsubscribe: (uri: string, context: RequestContext) => Effect.Effect<void, unknown, R>
}

/**
 * Serves `resources/subscribe` and `resources/unsubscribe` with the hooks,
 * and so declares `resources.subscribe`. A URI no resource or template
 * names is -32002, before any hook runs. Throws `DefinitionError` when the
 * server already serves those methods.
 *
 * @since 0.1.0
 * @category definitions
 */
export const subscriptions = <R2>(hooks: SubscriptionHooks<R2>) => <R>(server: McpServer<R>): McpServer<R | R2> =>
  Catalogue.setSubscriptions(server, hooks)
