/**
 * A server definition and the steps that build it: its options, its request
 * and notification tables and its middleware, each step returning a new
 * definition, and the capabilities `initialize` declares for it.
 * `McpServer` exports all of it; serving a definition is `McpServer.toHandler`.
 */
import type * as Effect from "effect/Effect"
import type * as Pipeable from "effect/Pipeable"
import { pipeArguments } from "effect/Pipeable"
import type * as Schema from "effect/Schema"
import { isRecord } from "../../internal/Records.ts"
import { duplicate } from "../DefinitionError.ts"
import type { MethodName } from "../Methods.ts"
import type * as Middleware from "../Middleware.ts"
import type { RequestContext, SessionContext } from "../RequestContext.ts"
import * as Router from "../Router.ts"
import * as RequestStateKeys from "./RequestStateKeys.ts"
import type { McpServerOptions } from "./ServerOptions.ts"

/**
 * A server definition: its options and its method tables, where `R` is what the handlers need.
 *
 * Immutable and pipeable: `method` and `notification` return a new definition, and `toHandler`
 * builds the handler a server transport mounts.
 *
 * @since 0.1.0
 * @category models
 */
export interface McpServer<R = never> extends Pipeable.Pipeable {
  readonly options: McpServerOptions
  readonly router: Router.Router<RequestContext, R>
  readonly notificationRouter: Router.Router<SessionContext, R>
  /** Around every request, in the order added (see `middleware`). */
  readonly middleware: ReadonlyArray<Middleware.Middleware<any, any>>
}

const Proto = {
  pipe() {
    return pipeArguments(this, arguments)
  }
}

const build = <R>(
  options: McpServerOptions,
  router: Router.Router<RequestContext, R>,
  notificationRouter: Router.Router<SessionContext, R>,
  middleware: ReadonlyArray<Middleware.Middleware<any, any>> = []
): McpServer<R> => Object.assign(Object.create(Proto), { options, router, notificationRouter, middleware })

/**
 * A server definition with no methods yet; `initialize`, `ping` and `logging/setLevel` are served regardless.
 * Throws a `DefinitionError` (kind `option`) for options it cannot serve
 * with: a `requestStateKey` (or one of `requestStateKeys`) shorter than 32 bytes.
 *
 * @example
 * ```ts
 * import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
 * import * as NodeStdio from "@effect/platform-node/NodeStdio"
 * import * as Effect from "effect/Effect"
 * import * as Schema from "effect/Schema"
 * import * as McpServer from "effect-mcp-transport/server/McpServer"
 * import * as StdioServerTransport from "effect-mcp-transport/server/StdioServerTransport"
 *
 * const EchoCall = Schema.Struct({ name: Schema.Literal("echo"), arguments: Schema.Struct({ text: Schema.String }) })
 *
 * const server = McpServer.make({ serverInfo: { name: "echo", version: "1.0.0" } }).pipe(
 *   McpServer.method("tools/list", {}, () =>
 *     Effect.succeed({
 *       tools: [{
 *         name: "echo",
 *         inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] }
 *       }]
 *     })),
 *   McpServer.method("tools/call", { params: EchoCall }, ({ arguments: { text } }) =>
 *     Effect.succeed({ content: [{ type: "text", text }] }))
 * )
 *
 * Effect.gen(function*() {
 *   const handle = yield* McpServer.toHandler(server) // one handle per stdio connection
 *   yield* StdioServerTransport.run(handle.handler)
 * }).pipe(Effect.provide([NodeStdio.layer, StdioServerTransport.layerLogger]), NodeRuntime.runMain)
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: McpServerOptions): McpServer => {
  RequestStateKeys.resolve(options)
  return build(options, Router.empty(), Router.empty())
}

/**
 * Registers a request method. `params` decodes the request's params (invalid
 * → -32602 with the decoder's message); `result`, when given, encodes the
 * handler's value to JSON. Fail with `RpcError` to choose the error reply;
 * any other failure or defect is answered -32603 with no details.
 *
 * A name in one of MCP's namespaces must be an MCP method (a misspelt one
 * does not compile); any other name is a custom method. A method registered
 * twice, or one the definitions of `Tool`, `Resource` or `Prompt` already
 * serve, throws a `DefinitionError`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const method = <
  const M extends string,
  P extends Schema.Top = typeof Schema.Unknown,
  A extends Schema.Top = typeof Schema.Unknown,
  R2 = never
>(
  name: MethodName<M>,
  schemas: Router.RouteSchemas<P, A>,
  handle: (params: P["Type"], context: RequestContext) => Effect.Effect<A["Type"], unknown, R2>
) =>
<R>(self: McpServer<R>): McpServer<R | R2 | P["DecodingServices"] | A["EncodingServices"]> => {
  if (self.router.requests.has(name)) throw duplicate("method", name)
  return build(self.options, Router.add(self.router, name, schemas, handle), self.notificationRouter, self.middleware)
}

/**
 * Registers a notification handler (e.g. `notifications/roots/list_changed`). Failures are dropped.
 *
 * @since 0.1.0
 * @category schemas
 */
export const notification = <P extends Schema.Top = typeof Schema.Unknown, R2 = never>(
  name: string,
  schemas: { readonly params?: P | undefined },
  handle: (params: P["Type"], context: SessionContext) => Effect.Effect<void, unknown, R2>
) =>
<R>(self: McpServer<R>): McpServer<R | R2 | P["DecodingServices"]> =>
  build(self.options, self.router, Router.addNotification(self.notificationRouter, name, schemas, handle), self.middleware)

/**
 * Wraps every request the server serves (both eras, every transport) in a
 * middleware (see the `Middleware` module). Each call wraps the server as
 * built so far: the middleware added last is the outermost and sees a
 * request first. Its `Provides` are taken off what the server needs, so add
 * it after the methods that use them. Every request also runs in a span
 * (`Middleware.requestSpan`) around all middleware.
 *
 * @since 0.1.0
 * @category middleware
 */
export const middleware = <Provides = never, Requires = never>(middleware: Middleware.Middleware<Provides, Requires>) =>
<R>(self: McpServer<R>): McpServer<Exclude<R, Provides> | Requires> =>
  build(self.options, self.router as Router.Router<RequestContext, any>, self.notificationRouter, [
    ...self.middleware,
    middleware
  ])

/**
 * The capabilities `initialize` declares: implied by the methods, then the explicit ones merged over them.
 *
 * @since 0.1.0
 * @category utils
 */
export const capabilities = (server: McpServer<any>): Record<string, unknown> => {
  const has = (m: string) => server.router.requests.has(m)
  const derived: Record<string, Record<string, unknown>> = { logging: {} }
  if (has("tools/list") || has("tools/call")) derived.tools = {}
  if (has("resources/list") || has("resources/read") || has("resources/templates/list")) derived.resources = {}
  if (has("resources/subscribe")) derived.resources = { ...derived.resources, subscribe: true }
  if (has("prompts/list") || has("prompts/get")) derived.prompts = {}
  if (has("completion/complete")) derived.completions = {}
  const merged: Record<string, unknown> = { ...derived }
  for (const [key, value] of Object.entries(server.options.capabilities ?? {})) {
    const base = merged[key]
    merged[key] = isRecord(base) && isRecord(value) ? { ...base, ...value } : value
  }
  return merged
}
