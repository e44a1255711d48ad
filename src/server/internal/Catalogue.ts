/**
 * The tables behind `Tool`, `Resource` and `Prompt`: one immutable catalogue
 * per server definition, and the MCP methods that serve it (lists, calls,
 * reads, completions), dispatching by name so that authors never do.
 *
 * The catalogue travels on the routes it installs (a definition is only
 * options and method tables), so a definition step reads the catalogue of
 * the server it is given, adds to a copy, and installs every method again
 * over the copy: earlier definitions are never changed.
 */
import * as Effect from "effect/Effect"
import * as JsonRpc from "../../JsonRpc.ts"
import { RpcError } from "../../McpError.ts"
import { DefinitionError, duplicate } from "../DefinitionError.ts"
import type * as Router from "../Router.ts"
import type { UriTemplate } from "./UriTemplate.ts"
import { isRecord } from "../../internal/Records.ts"

type Json = Record<string, unknown>

/**
 * McpServer's `RequestContext`, passed through untouched. Not imported: McpServer builds its handler on
 * the live catalogue, so this module stays below it.
 */
type RequestContext = any

/** A server definition as the catalogue reads and rebuilds it: McpServer's shape. */
export interface Definable<R = any> {
  readonly options: {
    readonly capabilities?: Record<string, unknown> | undefined
  }
  readonly router: Router.Router<RequestContext, R>
}

/** Completes one argument or variable: the values to offer for what the user typed so far. */
export type Completer<R> = (
  value: string,
  context: { readonly arguments: Readonly<Record<string, string>> }
) => Effect.Effect<ReadonlyArray<string>, unknown, R>

export interface ToolEntry<R> {
  readonly definition: Json
  readonly call: (args: unknown, ctx: RequestContext) => Effect.Effect<Json, unknown, R>
}

export interface ResourceEntry<R> {
  readonly definition: Json
  /** `false`: readable by its URI, left out of `resources/list`. */
  readonly listed?: boolean | undefined
  readonly read: (uri: string, ctx: RequestContext) => Effect.Effect<ReadonlyArray<Json>, unknown, R>
}

export interface TemplateEntry<R> {
  readonly definition: Json
  readonly template: UriTemplate
  /** `undefined`: the variables did not decode, so this template does not name the resource. */
  readonly read: (
    variables: Readonly<Record<string, string>>,
    uri: string,
    ctx: RequestContext
  ) => Effect.Effect<ReadonlyArray<Json> | string, unknown, R>
  readonly complete: Readonly<Record<string, Completer<R>>>
}

export interface PromptEntry<R> {
  readonly definition: Json
  readonly get: (args: unknown, ctx: RequestContext) => Effect.Effect<Json, unknown, R>
  readonly complete: Readonly<Record<string, Completer<R>>>
}

export interface SubscriptionHooks<R> {
  readonly subscribe: (uri: string, ctx: RequestContext) => Effect.Effect<void, unknown, R>
  readonly unsubscribe: (uri: string, ctx: RequestContext) => Effect.Effect<void, unknown, R>
}

export interface Catalogue<R> {
  readonly tools: ReadonlyMap<string, ToolEntry<R>>
  readonly resources: ReadonlyMap<string, ResourceEntry<R>>
  readonly templates: ReadonlyMap<string, TemplateEntry<R>>
  readonly prompts: ReadonlyMap<string, PromptEntry<R>>
  readonly subscriptions: SubscriptionHooks<R> | undefined
}

const CatalogueKey = Symbol.for("effect-mcp-transport/server/Catalogue")

interface CatalogueRoute<R> extends Router.RequestRoute<RequestContext, R> {
  readonly [CatalogueKey]: Catalogue<R>
}

export const isCatalogueRoute = (route: unknown): route is CatalogueRoute<any> =>
  typeof route === "object" && route !== null && CatalogueKey in route

const EMPTY: Catalogue<never> = {
  tools: new Map(),
  resources: new Map(),
  templates: new Map(),
  prompts: new Map(),
  subscriptions: undefined
}

/** The catalogue a server's routes carry (empty when it has none yet). */
export const of = <R>(server: Definable<R>): Catalogue<R> => {
  for (const route of server.router.requests.values()) {
    if (isCatalogueRoute(route)) return route[CatalogueKey]
  }
  return EMPTY
}

const invalidParams = (message: string, data?: unknown) =>
  new RpcError({ code: JsonRpc.ErrorCode.InvalidParams, rpcMessage: message, data })

/** -32002, the code MCP gives an unknown resource. */
export const RESOURCE_NOT_FOUND = -32002

const identity = (u: unknown) => Effect.succeed(u)

const MAX_COMPLETIONS = 100

/** Which tables are served even while empty (a server whose entries change while it serves). */
export interface Served {
  readonly tools?: boolean | undefined
  readonly resources?: boolean | undefined
  readonly prompts?: boolean | undefined
  readonly completions?: boolean | undefined
}

/** A method of a catalogue: a handler over that catalogue. */
export type Method<R> = (params: unknown, ctx: RequestContext) => Effect.Effect<unknown, unknown, R>

/** The methods a catalogue is served by, each a handler over that catalogue. */
export const methodsOf = <R>(c: Catalogue<R>, served: Served = {}): Record<string, Method<R>> => {
  const methods: Record<string, Method<R>> = {}
  if (c.tools.size > 0 || served.tools === true) {
    const tools = Array.from(c.tools.values(), (t) => t.definition)
    methods["tools/list"] = () => Effect.succeed({ tools })
    methods["tools/call"] = (params, ctx) => {
      const p = isRecord(params) ? params : {}
      const tool = typeof p.name === "string" ? c.tools.get(p.name) : undefined
      if (tool === undefined) return Effect.fail(invalidParams(`Unknown tool: ${String(p.name)}`, { name: p.name }))
      return tool.call(p.arguments ?? {}, ctx)
    }
  }
  if (c.resources.size > 0 || c.templates.size > 0 || served.resources === true) {
    const resources = Array.from(c.resources.values()).flatMap((r) => (r.listed === false ? [] : [r.definition]))
    const resourceTemplates = Array.from(c.templates.values(), (t) => t.definition)
    methods["resources/list"] = () => Effect.succeed({ resources })
    methods["resources/templates/list"] = () => Effect.succeed({ resourceTemplates })
    methods["resources/read"] = (params, ctx) => {
      const uri = isRecord(params) ? params.uri : undefined
      if (typeof uri !== "string") return Effect.fail(invalidParams("Invalid params: uri must be a string"))
      return Effect.map(read(c, uri, ctx), (contents) => ({ contents }))
    }
  }
  if (c.subscriptions !== undefined) {
    const hooks = c.subscriptions
    const subscription = (which: "subscribe" | "unsubscribe") => (params: unknown, ctx: RequestContext) => {
      const uri = isRecord(params) ? params.uri : undefined
      if (typeof uri !== "string") return Effect.fail(invalidParams("Invalid params: uri must be a string"))
      if (!names(c, uri)) return Effect.fail(notFound(uri))
      return Effect.as(hooks[which](uri, ctx), {})
    }
    methods["resources/subscribe"] = subscription("subscribe")
    methods["resources/unsubscribe"] = subscription("unsubscribe")
  }
  if (c.prompts.size > 0 || served.prompts === true) {
    const prompts = Array.from(c.prompts.values(), (p) => p.definition)
    methods["prompts/list"] = () => Effect.succeed({ prompts })
    methods["prompts/get"] = (params, ctx) => {
      const p = isRecord(params) ? params : {}
      const prompt = typeof p.name === "string" ? c.prompts.get(p.name) : undefined
      if (prompt === undefined) return Effect.fail(invalidParams(`Unknown prompt: ${String(p.name)}`, { name: p.name }))
      return prompt.get(p.arguments ?? {}, ctx)
    }
  }
  const completes = Array.from(c.prompts.values()).some((p) => Object.keys(p.complete).length > 0) ||
    Array.from(c.templates.values()).some((t) => Object.keys(t.complete).length > 0)
  if (completes || served.completions === true) methods["completion/complete"] = (params) => complete(c, params)
  return methods
}

const notFound = (uri: string) =>
  new RpcError({ code: RESOURCE_NOT_FOUND, rpcMessage: `Resource not found: ${uri}`, data: { uri } })

/** Whether the catalogue names `uri`: a fixed resource, or a template it matches. */
const names = (c: Catalogue<any>, uri: string): boolean =>
  c.resources.has(uri) || Array.from(c.templates.values()).some((t) => t.template.match(uri) !== undefined)

const read = <R>(c: Catalogue<R>, uri: string, ctx: RequestContext): Effect.Effect<ReadonlyArray<Json>, unknown, R> => {
  const fixed = c.resources.get(uri)
  if (fixed !== undefined) return fixed.read(uri, ctx)
  const candidates = Array.from(c.templates.values()).flatMap((t) => {
    const variables = t.template.match(uri)
    return variables === undefined ? [] : [{ t, variables }]
  })
  // The first template whose variables decode names the resource; the reasons of the others explain a miss.
  const reasons: Array<string> = []
  const next = (i: number): Effect.Effect<ReadonlyArray<Json>, unknown, R> => {
    if (i >= candidates.length) {
      return Effect.fail(
        reasons.length === 0
          ? notFound(uri)
          : new RpcError({
            code: RESOURCE_NOT_FOUND,
            rpcMessage: `Resource not found: ${uri} (${reasons.join("; ")})`,
            data: { uri }
          })
      )
    }
    const { t, variables } = candidates[i]
    return Effect.flatMap(t.read(variables, uri, ctx), (out) => {
      if (typeof out !== "string") return Effect.succeed(out)
      reasons.push(out)
      return next(i + 1)
    })
  }
  return next(0)
}

const complete = <R>(c: Catalogue<R>, params: unknown): Effect.Effect<unknown, unknown, R> => {
  const p = isRecord(params) ? params : {}
  const ref = isRecord(p.ref) ? p.ref : {}
  const argument = isRecord(p.argument) ? p.argument : {}
  const context = isRecord(p.context) && isRecord(p.context.arguments) ? p.context.arguments : {}
  if (typeof argument.name !== "string" || typeof argument.value !== "string") {
    return Effect.fail(invalidParams("Invalid params: argument needs a name and a value"))
  }
  let completers: Readonly<Record<string, Completer<R>>> | undefined
  if (ref.type === "ref/prompt" && typeof ref.name === "string") {
    completers = c.prompts.get(ref.name)?.complete
    if (completers === undefined) return Effect.fail(invalidParams(`Unknown prompt: ${ref.name}`, { name: ref.name }))
  } else if (ref.type === "ref/resource" && typeof ref.uri === "string") {
    completers = c.templates.get(ref.uri)?.complete
    if (completers === undefined) {
      return Effect.fail(invalidParams(`Unknown resource template: ${ref.uri}`, { uri: ref.uri }))
    }
  } else {
    return Effect.fail(invalidParams("Invalid params: ref must be a ref/prompt or a ref/resource"))
  }
  const completer = Object.hasOwn(completers, argument.name) ? completers[argument.name] : undefined
  if (completer === undefined) return Effect.succeed({ completion: { values: [], total: 0, hasMore: false } })
  const args = Object.fromEntries(Object.entries(context).filter(([, v]) => typeof v === "string")) as Record<string, string>
  return Effect.map(completer(argument.value, { arguments: args }), (all) => ({
    completion: {
      values: all.slice(0, MAX_COMPLETIONS),
      total: all.length,
      hasMore: all.length > MAX_COMPLETIONS
    }
  }))
}

/**
 * The server with `catalogue` served: every catalogue method is installed
 * again over it. A method the server already serves some other way is a
 * `DefinitionError`. Catalogues only grow, so every method installed before
 * is installed again.
 */
export const install = <S extends Definable>(server: S, catalogue: Catalogue<any>): S => {
  const requests = new Map<string, Router.RequestRoute<RequestContext, any>>(server.router.requests)
  for (const [method, handle] of Object.entries(methodsOf(catalogue))) {
    const existing = requests.get(method)
    if (existing !== undefined && !isCatalogueRoute(existing)) throw duplicate("method", method)
    const route: CatalogueRoute<any> = { decode: identity, encode: identity, handle, [CatalogueKey]: catalogue }
    requests.set(method, route)
  }
  // The prototype carries `pipe`; own fields are copied as they are.
  return Object.assign(Object.create(Object.getPrototypeOf(server)), server, {
    router: { requests, notifications: server.router.notifications }
  })
}

/** Adds one entry to the table `kind` of the server's catalogue. */
export const add = <S extends Definable, R2, K extends "tools" | "resources" | "templates" | "prompts">(
  server: S,
  kind: K,
  name: string,
  entry: Catalogue<R2>[K] extends ReadonlyMap<string, infer E> ? E : never
): S => {
  const current = of(server) as Catalogue<any>
  const table = current[kind] as ReadonlyMap<string, unknown>
  if (table.has(name)) throw duplicate(KIND_NAMES[kind], name)
  return install(server, { ...current, [kind]: new Map(table).set(name, entry) })
}

/** Sets the subscription hooks; a second set is a `DefinitionError`. */
export const setSubscriptions = <S extends Definable, R2>(server: S, hooks: SubscriptionHooks<R2>): S => {
  const current = of(server) as Catalogue<any>
  if (current.subscriptions !== undefined) {
    throw new DefinitionError({ kind: "method", name: "resources/subscribe", reason: "already has subscription hooks" })
  }
  return install(server, { ...current, subscriptions: hooks })
}

/** The table of each kind of entry, by the name `DefinitionError` gives the kind. */
export const TABLES = {
  tool: "tools",
  resource: "resources",
  resourceTemplate: "templates",
  prompt: "prompts"
} as const

const KIND_NAMES = {
  tools: "tool",
  resources: "resource",
  templates: "resourceTemplate",
  prompts: "prompt"
} as const
