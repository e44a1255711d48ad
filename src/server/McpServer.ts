/**
 * The server side of the MCP lifecycle, as a `Handler` any server transport
 * can mount (stdio, in-memory, HTTP): `initialize` with version negotiation,
 * automatic `ping`, rejection of everything else until the client sent
 * `notifications/initialized`, `logging/setLevel`, and a method table of
 * Schema-decoded handlers that receive a context for progress, logging and
 * requests to the client (gated by the client's declared capabilities).
 *
 * Per-session state (phase, negotiated version, client capabilities, log
 * level, the handlers' `SessionState` slots) is keyed by the transport's
 * session id and dropped when the transport reports the session ended
 * (`Handler.sessionEnded`): one handle can serve every session of an HTTP
 * server; on stdio and in-memory (no session id) one handle serves one
 * connection, so build one handle per connection there. The handle's state
 * lives in the scope `toHandler` runs in; `layerHttp`, `layerStdio` and
 * `runStdio` build it and mount it in one step.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Pipeable from "effect/Pipeable"
import type * as Scope from "effect/Scope"
import type * as Stdio from "effect/Stdio"
import type * as HttpServer from "effect/http/HttpServer"
import type { ServeError } from "effect/http/HttpServerError"
import * as Schema from "effect/Schema"
import type * as McpSchema from "effect/ai/McpSchema"
import { pipeArguments } from "effect/Pipeable"
import * as JsonRpc from "../JsonRpc.ts"
import {
  CapabilityNotSupported,
  RpcError,
  type TransportClosed
} from "../McpError.ts"
import * as ProtocolVersion from "../ProtocolVersion.ts"
import * as RequestMeta from "../RequestMeta.ts"
import {
  info,
  isLevel,
  LEVELS,
  LiveRequestContext,
  LiveSessionContext,
  type Session,
  sessionKey,
  statelessAsk,
  type Stores
} from "./internal/HandlerContexts.ts"
import * as AdoptedSession from "./internal/AdoptedSession.ts"
import * as FleetNotify from "./internal/FleetNotify.ts"
import * as LiveCatalogue from "./internal/LiveCatalogue.ts"
import * as RequestState from "./internal/RequestState.ts"
import * as RequestStateKeys from "./internal/RequestStateKeys.ts"
import { RequestStateKey } from "./RequestStateKey.ts"
import * as RetiredCodes from "./internal/RetiredCodes.ts"
import { InputKey, Rounds } from "./internal/Rounds.ts"
import * as SessionStore from "./internal/SessionStore.ts"
import * as Subscriptions from "./internal/Subscriptions.ts"
import * as TaskMethods from "./internal/TaskMethods.ts"
import * as TaskMethods2025 from "./internal/TaskMethods2025.ts"
import * as TaskRunner from "./internal/TaskRunner.ts"
import * as Catalogue from "./internal/Catalogue.ts"
import * as TaskWire from "../TaskWire.ts"
import { type DefinitionError, duplicate } from "./DefinitionError.ts"
import type { Handler, HandlerContext } from "./Handler.ts"
import type * as HttpServerTransport from "./HttpServerTransport.ts"
import type { SessionRecord } from "./SessionRegistry.ts"
import type * as StdioServerTransport from "./StdioServerTransport.ts"
import type { MethodName } from "./Methods.ts"
import * as Middleware from "./Middleware.ts"
import * as Router from "./Router.ts"
import * as ServerSpans from "./internal/ServerSpans.ts"
import type { Implementation } from "../Implementation.ts"
import type { RequestContext, SessionContext, SessionInfo } from "./RequestContext.ts"

export type {
  ClientCallError,
  ElicitRequest,
  RequestContext,
  SamplingRequest,
  SessionContext,
  SessionInfo
} from "./RequestContext.ts"

// ---------------------------------------------------------------------------
// Options and contexts

export type { Implementation }

/**
 * What a server says about itself at `initialize`, how strictly it holds to the lifecycle, and
 * how long its requests to the client may take.
 *
 * @since 0.1.0
 * @category models
 */
export interface McpServerOptions {
  readonly serverInfo: Implementation
  /** Sent in the `initialize` result (a hint for the model). */
  readonly instructions?: string | undefined
  /**
   * Merged over the capabilities implied by the registered methods (tools,
   * resources, resources.subscribe, prompts, completions; logging always),
   * e.g. `{ tools: { listChanged: true } }`.
   */
  readonly capabilities?: Readonly<Record<string, unknown>> | undefined
  /**
   * Reject requests other than `ping` and `initialize` until the client sent
   * `notifications/initialized` (default true). Sessionless HTTP POSTs
   * (`HandlerContext.ephemeral`) are never held to it: no record of their
   * client is kept.
   */
  readonly enforceInitialized?: boolean | undefined
  /**
   * How long a request that arrives after the `initialize` reply but before
   * `notifications/initialized` waits for it before it is rejected. Default:
   * 1 s on transports with session ids (HTTP, where the notification and the
   * request travel in separate POSTs that may be served in either order), 0
   * on transports without (stdio, in-memory: their dispatch lane hands a
   * request to the handler only after the notifications sent before it were
   * handled, so an early request there is the client's mistake). When set,
   * it applies on every transport.
   */
  readonly initializedGracePeriod?: Duration.Input | undefined
  /** The error code of that rejection (default -32002, the code most MCP clients expect for a request before initialization). */
  readonly notInitializedCode?: number | undefined
  /** Timeout of requests the server sends the client (sampling, elicitation, roots), default 60 s. */
  readonly clientRequestTimeout?: Duration.Input | undefined
  /**
   * The cache hints of the `server/discover` result (stateless era): how
   * long a client may reuse it (`ttlMs`, default 60 000) and who may share
   * a cached copy (`cacheScope`, default `"private"`: the runtime cannot
   * tell whether the instructions depend on who asks).
   */
  readonly discovery?: {
    readonly ttlMs?: number | undefined
    readonly cacheScope?: "public" | "private" | undefined
  } | undefined
  /**
   * The cache hints of list results and `resources/read` in the stateless
   * era, where the revision requires them, unless the handler's result has
   * its own: `ttlMs` (default 0: stale at once, so clients ask again) and
   * `cacheScope` (default `"private"`).
   */
  readonly resultCache?: {
    readonly ttlMs?: number | undefined
    readonly cacheScope?: "public" | "private" | undefined
  } | undefined
  /**
   * Also serve the stateless era (2026-07-28) next to the handshake: a
   * request whose `_meta` names a stateless revision is served on its own
   * (`server/discover`, `subscriptions/listen`, per-request capabilities).
   * A handler's asks of the client (elicitation, sampling, roots) become
   * `input_required` results there, and the client's retry runs the handler
   * again with the answers (see `requestStateKey`). `true` serves both eras
   * over stdio, in memory and over Streamable HTTP. Default `true`: a client
   * that speaks both eras gets the stateless one; `false` serves the
   * handshake only (a stateless request is then refused as an unsupported
   * revision, and the client falls back to `initialize`).
   */
  readonly stateless?: boolean | undefined
  /**
   * The HMAC-SHA256 key that signs the `requestState` of `input_required`
   * results (stateless era), so a client can neither forge one nor move one
   * to another request: at least 32 bytes (a string counts its UTF-8
   * bytes), else `make` throws a `DefinitionError`. Default: the
   * `RequestStateKey` reference's (a random key made once per process), so
   * several server processes behind one endpoint need a shared key here or
   * there. To rotate keys, use `requestStateKeys` instead.
   */
  readonly requestStateKey?: string | Uint8Array | undefined
  /**
   * Signing keys for rotation, current first: the first signs every state
   * issued, any of them is accepted on a state brought back, so states
   * issued before a rotation still work until they expire. Each at least 32
   * bytes; not together with `requestStateKey`.
   */
  readonly requestStateKeys?: ReadonlyArray<string | Uint8Array> | undefined
  /** How long a `requestState` may be brought back, default 10 minutes. */
  readonly requestStateTtl?: Duration.Input | undefined
  /**
   * The largest `requestState` the server issues or accepts (it carries the
   * client's answers of every round so far), default 256 KiB.
   */
  readonly requestStateMaxBytes?: number | undefined
  /**
   * Tasks (the `io.modelcontextprotocol/tasks` extension): served, and
   * declared under `capabilities.extensions`, when a tool has a
   * `taskSupport` other than `"forbidden"` or when this is given. `ttl`:
   * how long a task lives from its creation (its handler is interrupted and
   * its record forgotten then; `null` for no limit), default 10 minutes;
   * `pollInterval`: the polling interval suggested to clients, default 1 s.
   * The tasks are kept in the `TaskStore` service when the handle is built
   * with one, else in memory.
   */
  readonly tasks?: {
    readonly ttl?: Duration.Input | null | undefined
    readonly pollInterval?: Duration.Input | undefined
  } | undefined
}

/**
 * The default task TTL: 10 minutes.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_TASK_TTL_MS = TaskRunner.DEFAULT_TTL_MS

/**
 * The default polling interval suggested for tasks: one second.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_TASK_POLL_INTERVAL_MS = TaskRunner.DEFAULT_POLL_INTERVAL_MS

/**
 * The default `requestStateTtl`: 10 minutes.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_REQUEST_STATE_TTL_MS = 600_000

/**
 * The default `requestStateMaxBytes`: 256 KiB.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_REQUEST_STATE_MAX_BYTES = 262_144

/**
 * The default `discovery.ttlMs`: one minute.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_DISCOVERY_TTL_MS = 60_000

/**
 * The default `notInitializedCode`: -32002, the code most MCP clients expect for a request sent before initialization.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_NOT_INITIALIZED_CODE = -32002

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

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

// ---------------------------------------------------------------------------
// Lifecycle

const InitializeParams = Schema.Struct({
  protocolVersion: Schema.String,
  capabilities: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown)),
  clientInfo: Schema.Struct({
    name: Schema.String,
    version: Schema.String,
    title: Schema.optionalKey(Schema.String),
    description: Schema.optionalKey(Schema.String),
    websiteUrl: Schema.optionalKey(Schema.String)
  })
})
const decodeInitialize = Schema.decodeUnknownEffect(InitializeParams)

const decodeSetLevel = Schema.decodeUnknownEffect(Schema.Struct({ level: Schema.Literals(LEVELS) }))

const UNKNOWN_CLIENT: Implementation = { name: "unknown", version: "unknown" }

/** Stateless requests have no handshake to wait for. */
const NOT_AWAITED: Deferred.Deferred<void> = Deferred.makeUnsafe()

/** A path like `elicitation.url` as the nested object `-32021` names: `{ elicitation: { url: {} } }`. */
const capabilityObject = (path: string): Record<string, unknown> =>
  path.split(".").reduceRight<Record<string, unknown>>((inner, key) => ({ [key]: inner }), {})

/**
 * A handler that let a client capability error escape answers -32021
 * (stateless era): the client learns which capability to declare.
 */
const missingCapability = (error: unknown): RpcError | undefined =>
  error instanceof CapabilityNotSupported && error.peer === "client"
    ? new RpcError({
      code: JsonRpc.ErrorCode.MissingRequiredClientCapability,
      rpcMessage: `Missing required client capability: ${error.capability}`,
      data: { requiredCapabilities: capabilityObject(error.capability) }
    })
    : undefined

/**
 * Negotiation per the spec: the client's revision when we speak it, else our newest.
 *
 * @since 0.1.0
 * @category utils
 */
export const negotiate = (requested: string): ProtocolVersion.ProtocolVersion =>
  ProtocolVersion.isSupported(requested) ? requested : ProtocolVersion.LATEST

/**
 * What `toHandler` builds: the handler to mount, and the per-session state behind it.
 *
 * @since 0.1.0
 * @category models
 */
export interface ServerHandle<R> {
  /** Mount this on a server transport. */
  readonly handler: Handler<R>
  /** Sessions that sent `initialize` and have not ended. */
  readonly sessions: Effect.Effect<ReadonlyArray<SessionInfo>>
  /**
   * Sends a notification to every initialized session (e.g.
   * `notifications/tools/list_changed`), and a change notification to every
   * open `subscriptions/listen` that asked for its kind. Best effort. With a
   * `Bus` service where the handle was built, it goes through the bus to
   * every instance of the fleet (see `Bus`).
   */
  readonly notifyAll: (method: string, params?: unknown) => Effect.Effect<void>
  /**
   * Ends every open `subscriptions/listen` (stateless era) with its final
   * `complete` result, and answers later ones with an error: a graceful
   * shutdown. Stream transports run it themselves when their input ends.
   */
  readonly shutdown: Effect.Effect<void>
  /**
   * The tools, resources and prompts this handler serves, changed while it
   * serves: each kind whose `listChanged` the server declares in
   * `capabilities` (see `Definitions`).
   */
  readonly definitions: Definitions<R>
}

/**
 * The kinds of entries that change, named as `DefinitionError` names them; a
 * `resourceTemplate` is named by its URI template.
 *
 * @since 0.1.0
 * @category models
 */
export type DefinitionKind = LiveCatalogue.Kind

/**
 * Changes the entries of a serving server (`ServerHandle.definitions`). A
 * kind (tools; resources with their templates; prompts) can change when the
 * server declares its `listChanged` in `capabilities` and serves it with
 * `Tool`, `Resource` or `Prompt`; such a kind is served even while empty.
 * Each change is seen whole by the next request and announced with its
 * kind's list-changed notification to every initialized session (handshake
 * era) and every `subscriptions/listen` that asked for that kind
 * (stateless era); stateless-era lists of such a kind carry `ttlMs: 0`.
 *
 * Each operation fails with a `DefinitionError` and changes nothing when it
 * cannot be done: a name already defined (`add`), a name not defined
 * (`remove`, `enable`, `disable`), or a kind that cannot change. A call
 * already running is not affected by a change.
 *
 * @since 0.1.0
 * @category models
 */
export interface Definitions<R> {
  /**
   * Adds what a definition step adds, e.g. `Tool.add("shout", {…}, handler)`;
   * several steps composed into one (`flow(Tool.add(…), Prompt.add(…))`) are
   * added together or not at all. The step's handlers may need only what
   * the server's handlers need.
   */
  readonly add: (step: (server: McpServer<never>) => McpServer<R>) => Effect.Effect<void, DefinitionError>
  /** Removes an entry: gone from its list, and unknown to new calls. */
  readonly remove: (kind: DefinitionKind, name: string) => Effect.Effect<void, DefinitionError>
  /**
   * Hides an entry: absent from its list and answered as unknown (a tool:
   * -32602; a resource: not found) until `enable`. Disabling a disabled
   * entry changes nothing and announces nothing.
   */
  readonly disable: (kind: DefinitionKind, name: string) => Effect.Effect<void, DefinitionError>
  /** Shows a disabled entry again; enabling an enabled one changes nothing. */
  readonly enable: (kind: DefinitionKind, name: string) => Effect.Effect<void, DefinitionError>
}

/** The methods whose handlers may ask the client through `input_required` results (stateless era). */
/** The stateless era's results that must carry cache hints (`CacheableResult`). */
const CACHEABLE: ReadonlySet<string> = new Set([
  "tools/list",
  "prompts/list",
  "resources/list",
  "resources/templates/list",
  "resources/read"
])

const MULTI_ROUND: ReadonlySet<string> = new Set(["tools/call", "resources/read", "prompts/get"])

/**
 * Names the `input_required` ask made inside `effect` (stateless era): its
 * key in `inputRequests` and `inputResponses` is `key` instead of its
 * position among the unnamed asks (`ask-0`, `ask-1`…). For protocols or
 * clients that expect a fixed key. A key names one ask of a request: two asks
 * under one key are a defect. Ignored in the handshake era, where an ask is a
 * request to the client.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import * as McpServer from "effect-mcp-transport/server/McpServer"
 *
 * const server = McpServer.make({ serverInfo: { name: "greeter", version: "1.0.0" }, stateless: true }).pipe(
 *   McpServer.method("tools/call", {}, (_params, ctx) =>
 *     ctx.elicit({ message: "Your name?", requestedSchema: { type: "object", properties: { name: { type: "string" } } } }).pipe(
 *       McpServer.inputKey("user_name"),
 *       Effect.map((answer) => ({ content: [{ type: "text", text: `Hello, ${String(answer.content?.name)}` }] }))
 *     ))
 * )
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const inputKey = (key: string) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.provideService(effect, InputKey, key)

/**
 * Builds the handler and its per-session state, with the `definitions`
 * that change what it serves. The state lives in the caller's scope: when
 * it closes, every open `subscriptions/listen` ends (as with `shutdown`),
 * every session's `SessionState` slots are released and the sessions are
 * forgotten. Close the transports that mount the handler first (a layer
 * built after the handle is, by construction).
 *
 * @since 0.1.0
 * @category utils
 */
export const toHandler = <R>(server: McpServer<R>): Effect.Effect<ServerHandle<R>, never, Scope.Scope> =>
  Effect.flatMap(TaskRunner.forServer(server, Catalogue.of(server)), (runner) => {
    const live = LiveCatalogue.make(server)
    const built = Effect.acquireRelease(handlerOf(live.server, runner), (built) => built.release)
    const randomKey = server.options.stateless !== false && RequestStateKeys.resolve(server.options) === undefined
    return Effect.flatMap(built, ({ handle }) =>
      Effect.map(FleetNotify.carry(handle.notifyAll, { randomKey }), (notifyAll): ServerHandle<R> => {
      // Every instance of a fleet applies the same changes: each announces its own, to its own.
      const change = (c: LiveCatalogue.Change) =>
        Effect.flatMap(live.apply(c), (notifications) =>
          Effect.forEach(notifications, (method) => handle.notifyAll(method), { discard: true }))
      return {
        ...handle,
        notifyAll,
        definitions: {
          add: (step) => change({ _tag: "Add", step }),
          remove: (kind, name) => change({ _tag: "Remove", kind, name }),
          disable: (kind, name) => change({ _tag: "Disable", kind, name }),
          enable: (kind, name) => change({ _tag: "Enable", kind, name })
        }
      }
    }))
  })

const handlerOf = <R>(
  server: McpServer<R>,
  runner: TaskRunner.Runner | undefined
): Effect.Effect<{ readonly handle: Omit<ServerHandle<R>, "definitions">; readonly release: Effect.Effect<void> }> =>
  Effect.map(RequestStateKey, (defaultKeys) => {
    const options = server.options
    const stateless = options.stateless !== false
    const declared = runner === undefined ? capabilities(server) : TaskRunner.withExtension(capabilities(server))
    const enforce = options.enforceInitialized ?? true
    const notInitializedCode = options.notInitializedCode ?? DEFAULT_NOT_INITIALIZED_CODE
    const timeoutMs = options.clientRequestTimeout === undefined ? 60_000 : Duration.toMillis(options.clientRequestTimeout)
    const explicitGrace = options.initializedGracePeriod === undefined
      ? undefined
      : Duration.fromInputUnsafe(options.initializedGracePeriod)
    const graceFor = (sessionId: string | undefined): Duration.Duration =>
      explicitGrace ?? (sessionId === undefined ? Duration.zero : Duration.seconds(1))
    const sessions = new Map<string, Session>()
    const slotStores = new Map<string, SessionStore.SessionStore>()
    const stores: Stores = {
      forSession: (key) => {
        let store = slotStores.get(key)
        if (store === undefined) slotStores.set(key, store = SessionStore.make())
        return store
      }
    }
    const sessionEnded = (sessionId: string | undefined): Effect.Effect<void> =>
      Effect.suspend(() => {
        const key = sessionKey(sessionId)
        sessions.delete(key)
        const store = slotStores.get(key)
        slotStores.delete(key)
        return store?.close ?? Effect.void
      })
    const subscriptions = Subscriptions.make()
    const serverInfoMeta = { [RequestMeta.MetaKey.serverInfo]: options.serverInfo }
    const resultCacheHints = {
      ttlMs: options.resultCache?.ttlMs ?? 0,
      cacheScope: options.resultCache?.cacheScope ?? "private"
    }
    const stateConfig: RequestState.Config = {
      keys: RequestStateKeys.resolve(options) ?? RequestStateKeys.provided(defaultKeys),
      ttlMs: options.requestStateTtl === undefined
        ? DEFAULT_REQUEST_STATE_TTL_MS
        : Duration.toMillis(Duration.fromInputUnsafe(options.requestStateTtl)),
      maxBytes: options.requestStateMaxBytes ?? DEFAULT_REQUEST_STATE_MAX_BYTES
    }
    const discoverResult: Record<string, unknown> = {
      resultType: "complete",
      supportedVersions: [...ProtocolVersion.STATELESS],
      capabilities: declared,
      ...(options.instructions === undefined ? {} : { instructions: options.instructions }),
      ttlMs: options.discovery?.ttlMs ?? DEFAULT_DISCOVERY_TTL_MS,
      cacheScope: options.discovery?.cacheScope ?? "private",
      _meta: serverInfoMeta
    }

    const initializeResult = (version: ProtocolVersion.ProtocolVersion) => {
      const result: Record<string, unknown> = {
        protocolVersion: version,
        capabilities: runner !== undefined && version === TaskWire.CORE_TASKS_VERSION
          ? { ...declared, tasks: TaskWire.coreCapability(runner.store.list !== undefined) }
          : declared,
        serverInfo: options.serverInfo
      }
      if (options.instructions !== undefined) result.instructions = options.instructions
      return result
    }

    const anonymousSession = (): Session => ({
      phase: "ready",
      era: "legacy",
      protocolVersion: ProtocolVersion.LATEST,
      clientInfo: { name: "unknown", version: "unknown" },
      clientCapabilities: {},
      logLevel: undefined,
      channel: undefined,
      initialized: Deferred.makeUnsafe()
    })

    const sessionContext = (hctx: HandlerContext, session: Session): LiveSessionContext =>
      new LiveSessionContext(hctx, session, stores)

    const requestContext = (request: JsonRpc.JsonRpcRequest, hctx: HandlerContext, session: Session): LiveRequestContext =>
      new LiveRequestContext(request, hctx, session, stores, timeoutMs)

    const onRequest = (
      request: JsonRpc.JsonRpcRequest,
      hctx: HandlerContext
    ): Effect.Effect<JsonRpc.JsonRpcResponse, never, R> => {
      // A request carrying the stateless era's metadata is served on its own;
      // `initialize` always starts a handshake-era session.
      if (stateless && request.method !== "initialize") {
        const read = RequestMeta.readMeta(request.params)
        if (read._tag !== "Absent") return serveStateless(request, hctx, read)
      }
      if (hctx.ephemeral === true) return serveEphemeral(request, hctx)
      const key = sessionKey(hctx.sessionId)
      switch (request.method) {
        case "initialize":
          return decodeInitialize(request.params ?? {}).pipe(
            Effect.match({
              onFailure: (e) => Router.invalidParams(request.id, e),
              onSuccess: (p) => {
                const version = negotiate(p.protocolVersion)
                // A repeated initialize starts the session over.
                sessions.set(key, {
                  phase: "initializing",
                  era: "legacy",
                  protocolVersion: version,
                  clientInfo: p.clientInfo,
                  clientCapabilities: p.capabilities ?? {},
                  logLevel: undefined,
                  channel: undefined,
                  initialized: Deferred.makeUnsafe()
                })
                return JsonRpc.success(request.id, initializeResult(version))
              }
            })
          )
        case "ping":
          return Effect.succeed(JsonRpc.success(request.id, {}))
      }
      const known = sessions.get(key)
      if (enforce && known?.phase !== "ready") {
        const reject = Effect.succeed(
          JsonRpc.failure(
            request.id,
            notInitializedCode,
            known === undefined
              ? "Server not initialized: send initialize first"
              : "Server not initialized: send notifications/initialized first",
            { method: request.method }
          )
        )
        const grace = graceFor(hctx.sessionId)
        if (known === undefined || Duration.isZero(grace)) return reject
        return Deferred.await(known.initialized).pipe(
          Effect.timeoutOption(grace),
          Effect.flatMap((o) => (o._tag === "Some" ? serve(request, hctx, known) : reject))
        )
      }
      // Without enforcement a request may come with no session at all (stateless HTTP).
      return serve(request, hctx, known ?? anonymousSession())
    }

    /**
     * A sessionless POST of the handshake era: no connection to keep a
     * record for, and other clients' POSTs come the same way, so nothing is
     * read from or kept in `sessions`. `initialize` is answered and
     * forgotten; anything else is served as initialized, with no client
     * capabilities known.
     */
    const serveEphemeral = (
      request: JsonRpc.JsonRpcRequest,
      hctx: HandlerContext
    ): Effect.Effect<JsonRpc.JsonRpcResponse, never, R> => {
      switch (request.method) {
        case "initialize":
          return decodeInitialize(request.params ?? {}).pipe(
            Effect.match({
              onFailure: (e) => Router.invalidParams(request.id, e),
              onSuccess: (p) => JsonRpc.success(request.id, initializeResult(negotiate(p.protocolVersion)))
            })
          )
        case "ping":
          return Effect.succeed(JsonRpc.success(request.id, {}))
      }
      return serve(request, hctx, anonymousSession())
    }

    /** The stateless era: everything the request needs comes with it; nothing is read from or kept in `sessions`. */
    const serveStateless = (
      request: JsonRpc.JsonRpcRequest,
      hctx: HandlerContext,
      read: Exclude<RequestMeta.ReadMeta, { _tag: "Absent" }>
    ): Effect.Effect<JsonRpc.JsonRpcResponse, never, R> => {
      if (read._tag === "Invalid") {
        return Effect.succeed(
          JsonRpc.failure(request.id, JsonRpc.ErrorCode.InvalidParams, `Missing or invalid _meta fields: ${read.missing.join(", ")}`, {
            missing: read.missing
          })
        )
      }
      const meta = read.meta
      if (!ProtocolVersion.isStateless(meta.protocolVersion)) {
        return Effect.succeed(
          JsonRpc.failure(request.id, JsonRpc.ErrorCode.UnsupportedProtocolVersion, "Unsupported protocol version", {
            supported: [...ProtocolVersion.STATELESS],
            requested: meta.protocolVersion
          })
        )
      }
      if (meta.logLevel !== undefined && !isLevel(meta.logLevel)) {
        return Effect.succeed(
          JsonRpc.failure(request.id, JsonRpc.ErrorCode.InvalidParams, `Unknown log level: ${meta.logLevel}`, {
            levels: LEVELS
          })
        )
      }
      if (RequestMeta.REMOVED_METHODS.has(request.method)) {
        return Effect.succeed(JsonRpc.methodNotFound(request.id, request.method))
      }
      switch (request.method) {
        case "server/discover":
          return Effect.succeed(JsonRpc.success(request.id, discoverResult))
        case "subscriptions/listen": {
          const params = request.params as Record<string, unknown>
          const listen = (tasks?: TaskMethods.TaskListen): Effect.Effect<JsonRpc.JsonRpcResponse> => {
            const agreed = Subscriptions.agree(params.notifications, declared)
            const held = subscriptions.hold(
              request.id,
              tasks === undefined ? agreed : { ...agreed, taskIds: tasks.agreed },
              hctx.notify,
              tasks?.feed
            )
            if (held === undefined) {
              return Effect.succeed(JsonRpc.failure(request.id, JsonRpc.ErrorCode.InternalError, "The server is shutting down"))
            }
            return Effect.as(
              held,
              JsonRpc.success(request.id, {
                resultType: "complete",
                _meta: { ...serverInfoMeta, [RequestMeta.MetaKey.subscriptionId]: request.id }
              })
            )
          }
          const taskIds = runner === undefined ? undefined : TaskMethods.requestedTaskIds(params.notifications)
          if (runner === undefined || taskIds === undefined) return listen()
          if (!TaskWire.declares(meta.clientCapabilities)) return Effect.succeed(TaskMethods.listenRefused(request.id))
          return Effect.flatMap(TaskMethods.listen(runner, taskIds, TaskRunner.ownerKey(hctx.principal, undefined), request.id, hctx.notify), listen)
        }
      }
      if (runner !== undefined && TaskMethods.handles(request.method)) {
        return TaskMethods.serve(runner, request, TaskWire.declares(meta.clientCapabilities), TaskRunner.ownerKey(hctx.principal, undefined))
          .pipe(Effect.map((response) => completeResponse(request.method, response)))
      }
      const session: Session = {
        phase: "ready",
        era: "modern",
        protocolVersion: meta.protocolVersion,
        clientInfo: meta.clientInfo ?? UNKNOWN_CLIENT,
        clientCapabilities: meta.clientCapabilities,
        logLevel: meta.logLevel as McpSchema.LoggingLevel | undefined,
        channel: undefined,
        initialized: NOT_AWAITED
      }
      if (MULTI_ROUND.has(request.method) && isRecord(request.params)) {
        return serveRounds(request, request.params, hctx, session)
      }
      const ctx = requestContext(request, hctx, session)
      return ctx.releasing(Router.dispatch(server.router, request, ctx, missingCapability)).pipe(
        Effect.map((response) => completeResponse(request.method, response))
      )
    }

    const completeResponse = (method: string, response: JsonRpc.JsonRpcResponse): JsonRpc.JsonRpcResponse =>
      "result" in response ? JsonRpc.success(response.id, statelessResult(method, response.result)) : RetiredCodes.toStateless(response)

    /**
     * A request that may answer `input_required`: the handler runs from the
     * start with the answers recorded so far; its first ask with no answer
     * stops it, and the request is answered with what it asked and a signed
     * state holding the answers, for the client's retry.
     */
    const serveRounds = (
      request: JsonRpc.JsonRpcRequest,
      params: Record<string, unknown>,
      hctx: HandlerContext,
      session: Session
    ): Effect.Effect<JsonRpc.JsonRpcResponse, never, R> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const { inputResponses, requestState, ...own } = params
        let digest: string | undefined
        const binding: RequestState.Binding = {
          method: request.method,
          name: String((request.method === "resources/read" ? params.uri : params.name) ?? ""),
          // Hashed only when a state is checked or issued: most calls carry none and ask nothing.
          get digest() {
            return digest ??= RequestState.digestParams(params)
          },
          principal: hctx.principal
        }
        let answers: Record<string, unknown> = {}
        if (requestState === undefined) {
          // No state: nothing was asked before, so every answer comes from this request (a client
          // retrying a server that issues no state); only those the run uses are carried on.
          if (isRecord(inputResponses)) answers = { ...inputResponses }
        } else {
          const verified = RequestState.verify(stateConfig, binding, requestState, now)
          if (verified._tag === "Invalid") {
            return Effect.succeed(JsonRpc.failure(request.id, JsonRpc.ErrorCode.InvalidParams, `Invalid requestState: ${verified.reason}`))
          }
          // Only the keys asked last round are taken from the client; the rest came signed.
          answers = { ...verified.state.answers }
          const responses = isRecord(inputResponses) ? inputResponses : {}
          for (const key of verified.state.asked) {
            if (Object.hasOwn(responses, key) && responses[key] !== undefined) answers[key] = responses[key]
          }
        }
        const rounds = new Rounds(answers)
        // The handler sees the request as the client first sent it.
        const ownRequest = JsonRpc.request(request.id, request.method, own) as JsonRpc.JsonRpcRequest
        const ctx = new LiveRequestContext(ownRequest, hctx, session, stores, timeoutMs, rounds)
        // Read the clock again: the state's lifetime starts when it is issued, however long the handler ran.
        const inputRequired = Effect.map(Clock.currentTimeMillis, (issuedAt): JsonRpc.JsonRpcResponse => {
          const carried = requestState === undefined
            ? Object.fromEntries(Object.entries(answers).filter(([key]) => rounds.used.has(key)))
            : answers
          const token = RequestState.issue(stateConfig, binding, { answers: carried, asked: Array.from(rounds.pending.keys()) }, issuedAt)
          if (token === undefined) {
            return JsonRpc.failure(
              request.id,
              JsonRpc.ErrorCode.InternalError,
              `The answers of this request outgrew the requestState bound (${stateConfig.maxBytes} bytes)`
            )
          }
          return JsonRpc.success(request.id, {
            resultType: "input_required",
            inputRequests: Object.fromEntries(rounds.pending),
            requestState: token,
            _meta: serverInfoMeta
          })
        })
        const invalidAnswer = (invalid: NonNullable<Rounds["invalid"]>) =>
          Effect.succeed(JsonRpc.failure(
            request.id,
            JsonRpc.ErrorCode.InvalidParams,
            `Invalid inputResponses: the answer to "${invalid.key}" is not a ${invalid.method} result`,
            { key: invalid.key, reason: invalid.reason }
          ))
        return ctx.releasing(Router.dispatch(server.router, ownRequest, ctx, missingCapability)).pipe(
          Effect.matchCauseEffect({
            onFailure: (cause) =>
              rounds.invalid !== undefined
                ? invalidAnswer(rounds.invalid)
                : rounds.pending.size > 0 && Cause.hasInterruptsOnly(cause)
                ? inputRequired
                : Effect.failCause(cause),
            // A handler that caught its ask's interruption still lacks the answer.
            onSuccess: (response) =>
              rounds.invalid !== undefined
                ? invalidAnswer(rounds.invalid)
                : rounds.pending.size > 0
                ? inputRequired
                : Effect.succeed(completeResponse(request.method, response))
          })
        )
      })

    /**
     * `resultType` (unless the handler chose one), the server's identity in
     * `_meta`, and on the results the revision makes cacheable (lists and
     * `resources/read`) the `resultCache` hints unless the handler gave its own.
     */
    const statelessResult = (method: string, result: unknown): Record<string, unknown> => {
      const r = method === "tools/list" && runner !== undefined ? TaskRunner.withoutExecution(result) : isRecord(result) ? result : {}
      const meta = { ...serverInfoMeta, ...(isRecord(r._meta) ? r._meta : {}) }
      return CACHEABLE.has(method)
        ? { resultType: "complete", ...resultCacheHints, ...r, _meta: meta }
        : { resultType: "complete", ...r, _meta: meta }
    }

    /** A session of the 2025-11-25 tasks: their methods, and `tools/call` told what `params.task` asks. */
    const serve = (
      request: JsonRpc.JsonRpcRequest,
      hctx: HandlerContext,
      session: Session
    ): Effect.Effect<JsonRpc.JsonRpcResponse, never, R> =>
      Effect.andThen(ServerSpans.protocolVersion(session.protocolVersion), serveInSession(request, hctx, session))

    const serveInSession = (
      request: JsonRpc.JsonRpcRequest,
      hctx: HandlerContext,
      session: Session
    ): Effect.Effect<JsonRpc.JsonRpcResponse, never, R> => {
      if (runner === undefined || !TaskMethods2025.speaks(session)) return serveSession(request, hctx, session)
      if (TaskMethods2025.handles(request.method)) return TaskMethods2025.serve(runner, request, hctx)
      return request.method === "tools/call"
        ? Effect.provideService(
          serveSession(request, hctx, session),
          TaskMethods2025.CurrentAugmentation,
          TaskMethods2025.augmentationOf(request.params)
        )
        : serveSession(request, hctx, session)
    }

    const serveSession = (
      request: JsonRpc.JsonRpcRequest,
      hctx: HandlerContext,
      session: Session
    ): Effect.Effect<JsonRpc.JsonRpcResponse, never, R> => {
      if (runner !== undefined && TaskMethods.handles(request.method)) {
        return TaskMethods.serve(
          runner,
          request,
          TaskWire.declares(session.clientCapabilities),
          TaskRunner.ownerKey(hctx.principal, hctx.ephemeral === true ? undefined : hctx.sessionId)
        )
      }
      const ctx = requestContext(request, hctx, session)
      if (request.method === "logging/setLevel") {
        return decodeSetLevel(request.params ?? {}).pipe(
          Effect.matchEffect({
            onFailure: (e) => Effect.succeed<JsonRpc.JsonRpcResponse>(Router.invalidParams(request.id, e)),
            onSuccess: (p) => {
              session.logLevel = p.level
              return server.router.requests.has(request.method)
                ? ctx.releasing(Router.dispatch(server.router, request, ctx))
                : Effect.succeed(JsonRpc.success(request.id, {}))
            }
          })
        )
      }
      return ctx.releasing(Router.dispatch(server.router, request, ctx))
    }

    const onNotification = (
      n: JsonRpc.JsonRpcNotification,
      hctx: HandlerContext
    ): Effect.Effect<null, never, R> => {
      if (hctx.ephemeral === true) {
        const ctx = sessionContext(hctx, anonymousSession())
        return Effect.as(ctx.releasing(Router.dispatchNotification(server.notificationRouter, n, ctx)), null)
      }
      const session = sessions.get(sessionKey(hctx.sessionId))
      if (session === undefined) return Effect.succeed(null)
      if (n.method === "notifications/initialized" && session.phase === "initializing") {
        session.phase = "ready"
        session.channel = hctx
        Deferred.doneUnsafe(session.initialized, Effect.void)
      }
      return Effect.as(Router.dispatchNotification(server.notificationRouter, n, sessionContext(hctx, session)), null)
    }

    // The tools as `tools/list` lists them, read when a stateless `tools/call`
    // needs its header parameters checked; listed again after a list change.
    let toolSchemas: Map<string, unknown> | undefined
    const quietContext: HandlerContext = {
      sessionId: undefined,
      requestId: undefined,
      notify: () => Effect.void,
      request: (method) => Effect.fail(statelessAsk(method))
    }
    const listTools = Effect.gen(function*() {
      const found = new Map<string, unknown>()
      let cursor: unknown = undefined
      // A bounded walk: a tools/list whose cursors never end cannot hold a request forever.
      for (let page = 0; page < 100; page++) {
        const request: JsonRpc.JsonRpcRequest = {
          jsonrpc: "2.0",
          id: `tool-schemas-${page}`,
          method: "tools/list",
          params: {
            ...(cursor === undefined ? {} : { cursor }),
            _meta: RequestMeta.requestMeta({ protocolVersion: ProtocolVersion.LATEST_STATELESS, clientCapabilities: {} })
          }
        }
        const meta = RequestMeta.readMeta(request.params)
        if (meta._tag !== "Valid") break
        const reply = yield* serveStateless(request, quietContext, meta)
        if (!("result" in reply) || !isRecord(reply.result)) break
        const tools = reply.result.tools
        if (Array.isArray(tools)) {
          for (const tool of tools) {
            if (isRecord(tool) && typeof tool.name === "string") found.set(tool.name, tool.inputSchema)
          }
        }
        cursor = reply.result.nextCursor
        if (typeof cursor !== "string") break
      }
      return found
    })
    // Counts list changes: a listing begun before a change is used once, not kept.
    let toolListChanges = 0
    const toolInputSchema = (name: string): Effect.Effect<unknown, never, R> =>
      Effect.suspend(() => {
        if (toolSchemas !== undefined) return Effect.succeed(toolSchemas.get(name))
        const changes = toolListChanges
        return Effect.map(listTools, (found) => {
          if (changes === toolListChanges) toolSchemas = found
          return found.get(name)
        })
      })

    const composed = Middleware.compose(server.middleware, stateless, onRequest, (hctx) => sessions.get(sessionKey(hctx.sessionId))?.protocolVersion)
    const serveRequest: typeof composed = runner === undefined
      ? composed
      : (message, hctx) => Effect.provideService(composed(message, hctx), TaskRunner.CurrentRunner, runner)
    const handler: Handler<R> = Object.assign(
      (message: JsonRpc.JsonRpcRequest | JsonRpc.JsonRpcNotification, hctx: HandlerContext) =>
        "id" in message
          ? serveRequest(message, hctx)
          : ServerSpans.notification(message, hctx.sessionId, onNotification(message, hctx)),
      {
        shutdown: subscriptions.endAll,
        sessionEnded,
        adoptSession: (sessionId: string, record: SessionRecord, channel: HandlerContext) =>
          Effect.sync(() => AdoptedSession.adopt(sessions, sessionId, record, channel)),
        stateless,
        ...(stateless && server.router.requests.has("tools/list") ? { toolInputSchema } : {})
      }
    )

    // The end of the handle's scope: listens get their final result, then every session's slots go.
    const release = Effect.andThen(
      subscriptions.endAll,
      Effect.suspend(() => {
        const stores = Array.from(slotStores.values())
        slotStores.clear()
        sessions.clear()
        return Effect.forEach(stores, (store) => store.close, { discard: true })
      })
    )

    const handle: Omit<ServerHandle<R>, "definitions"> = {
      handler,
      sessions: Effect.sync(() => Array.from(sessions, ([key, s]) => info(key === "" ? undefined : key, s))),
      notifyAll: (method, params) =>
        Effect.sync(() => {
          if (method === "notifications/tools/list_changed") {
            toolSchemas = undefined
            toolListChanges++
          }
        }).pipe(Effect.andThen(Effect.forEach(
          Array.from(sessions.values()),
          (s) => (s.phase === "ready" && s.channel !== undefined ? Effect.ignore(s.channel.notify(method, params)) : Effect.void),
          { discard: true }
        ).pipe(Effect.andThen(subscriptions.publish(method, params))))),
      shutdown: subscriptions.endAll
    }
    return { handle, release }
  })

// ---------------------------------------------------------------------------
// Serving as a layer: the handle built in the layer's scope, mounted on a
// transport and offered as the `Handle` service. Closing the layer closes
// the transport first (sessions and streams end), then the handle. The
// transports are loaded when a layer is built, so that a program importing
// `McpServer` pays only for the transport it serves on.

/**
 * A serving server's handle as a service: `sessions`, `notifyAll`,
 * `shutdown` and `definitions` (whose added entries' handlers may need only
 * what the layer already provides: none beyond it). The handler itself is
 * the transport's.
 *
 * @since 0.1.0
 * @category models
 */
export interface HandleShape extends Omit<ServerHandle<never>, "handler"> {}

/**
 * The handle of the server `layerStdio` or `layerHttp` serves.
 *
 * @since 0.1.0
 * @category services
 */
export class Handle extends Context.Service<Handle, HandleShape>()("effect-mcp-transport/McpServer/Handle") {}

/**
 * The handle, built in the layer's scope, with the transport layer made from its handler.
 */
const serving = <R, A, E, R2>(
  server: McpServer<R>,
  mount: (handle: ServerHandle<R>) => Effect.Effect<Layer.Layer<A, E, R2>>
): Layer.Layer<Handle | A, E, R2> =>
  Layer.unwrap(Effect.gen(function*() {
    const handle = yield* toHandler(server)
    const transport = yield* mount(handle)
    return Layer.merge(Layer.succeed(Handle, handle), transport)
  }))

/**
 * Serves `server` on stdin/stdout while the layer lives, with `Handle` and
 * `StdioServerTransport.StdioServer` as services. The end of stdin does not
 * end the layer: a program waits for it with the `StdioServer`'s
 * `awaitDone` (or uses `runStdio`, which does).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerStdio = <R>(
  server: McpServer<R>,
  options?: StdioServerTransport.StdioServerOptions
): Layer.Layer<
  Handle | StdioServerTransport.StdioServer,
  StdioServerTransport.StdioAlreadyServing,
  Stdio.Stdio | R
> =>
  serving(server, (handle) =>
    Effect.map(
      Effect.promise(() => import("./StdioServerTransport.ts")),
      (Stdio) => Stdio.layer(handle.handler, options)
    ))

/**
 * Serves `server` on stdin/stdout until stdin ends (replies in flight
 * written) or stdout fails, then releases the handle and completes: the
 * main effect of a stdio server.
 *
 * @since 0.1.0
 * @category utils
 */
export const runStdio = <R>(
  server: McpServer<R>,
  options?: StdioServerTransport.StdioServerOptions
): Effect.Effect<TransportClosed, StdioServerTransport.StdioAlreadyServing, Stdio.Stdio | R> =>
  Effect.scoped(Effect.gen(function*() {
    const Stdio = yield* Effect.promise(() => import("./StdioServerTransport.ts"))
    const handle = yield* toHandler(server)
    return yield* Stdio.run(handle.handler, options)
  }))

/**
 * Serves `server` on Streamable HTTP (`HttpServerTransport.layer`: bound
 * to `options.host`, default 127.0.0.1, and `options.port`, default 8421, 0
 * for any free port) while the layer lives, with `Handle`,
 * `HttpServerTransport.HttpServerTransport` (its `url`, `sessionIds`,
 * `stats`) and the `HttpServer` as services. One handle serves every session.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerHttp = <R>(
  server: McpServer<R>,
  options?: HttpServerTransport.Options
): Layer.Layer<Handle | HttpServerTransport.HttpServerTransport | HttpServer.HttpServer, ServeError, R> =>
  serving(server, (handle) =>
    Effect.map(
      Effect.promise(() => import("./HttpServerTransport.ts")),
      (Http) => Http.layer(handle.handler, options)
    ))
