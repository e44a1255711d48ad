/**
 * The MCP protocol layer over any client transport: the handshake, version
 * negotiation, capability checks, typed methods with decoded results and
 * typed server notifications. How a call is sent and timed is the call
 * engine's (internal/McpCallEngine), the answers to the server's requests
 * are internal/ServerRequests', and the optional keep-alive is
 * internal/KeepAlive's.
 *
 * The handshake is enforced by construction: a client value only exists
 * once `initialize` succeeded and `notifications/initialized` was sent, and
 * the client never hands out the raw transport, so no method can reach the
 * server before the session is set up.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import type * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as SubscriptionRef from "effect/SubscriptionRef"
import type * as McpSchema from "effect/ai/McpSchema"
import type * as Schema from "effect/Schema"
import * as Exit from "effect/Exit"
import * as SubscriptionRefMake from "effect/SubscriptionRef"
import {
  CapabilityNotSupported,
  type InvalidPayload,
  type NotifyError,
  type RequestError,
  RequestTimeout,
  RpcError,
  UnsupportedProtocolVersion
} from "../McpError.ts"
import * as ProtocolVersion from "../ProtocolVersion.ts"
import * as RequestMeta from "../RequestMeta.ts"
import * as Negotiation from "./Negotiation.ts"
import * as Listen from "./internal/Listen.ts"
import * as ModernCalls from "./internal/ModernCalls.ts"
import * as ResultCache from "./internal/ResultCache.ts"
import type { Implementation } from "../Implementation.ts"
import type * as JsonRpc from "../JsonRpc.ts"
import type { AuthError } from "../AuthError.ts"
import {
  group,
  type Grouped,
  type McpAuthError,
  type McpProtocolError,
  type McpServerError,
  type McpTransportError
} from "../McpErrorGroup.ts"
import { type AuthErrorOf, ClientTransport, type ClientTransportShape } from "./ClientTransport.ts"
import type { LoggingMessage, Progress } from "./ServerNotification.ts"
import * as KeepAlive from "./internal/KeepAlive.ts"
import * as LazySchemas from "./internal/LazySchemas.ts"
import * as ClientSpans from "./internal/ClientSpans.ts"
import * as McpCallEngine from "./internal/McpCallEngine.ts"
import type { CallEvent, CallOptions, FlatError, PageParams } from "./internal/McpCallEngine.ts"
import type * as ClientSchemas from "./internal/McpClientSchemas.ts"
import { ServerNotification } from "./internal/ServerNotificationEnum.ts"
import * as ServerRequests from "./internal/ServerRequests.ts"
import * as Metrics from "../observability/Metrics.ts"
import type { ServerRequestHandlers } from "./internal/ServerRequests.ts"
import * as TaskCalls from "./internal/TaskCalls.ts"
import * as TaskResults from "./internal/TaskResults.ts"
import type { TaskHandle, TaskState, ToolCallTask } from "./TaskHandle.ts"

export { type LoggingMessage, type Progress, ServerNotification }
export { type CallEvent, type CallOptions, type PageParams } from "./internal/McpCallEngine.ts"
export {
  type ElicitParams,
  type ElicitResult,
  type Root,
  type SamplingParams,
  type SamplingResult,
  type ServerRequestHandlers
} from "./internal/ServerRequests.ts"
export { Health, type KeepAliveOptions } from "./internal/KeepAlive.ts"
export { type ListenFilter, ListenState } from "./internal/Listen.ts"
export type { ModernError } from "./internal/ModernCalls.ts"
export type { Implementation }
export type { TaskHandle, TaskState, ToolCallTask } from "./TaskHandle.ts"

// ---------------------------------------------------------------------------
// Errors and options

/**
 * What a typed method can fail with: the groups of `McpErrorGroup`, each
 * holding one flat error as its `reason`. `A` is the transport's
 * authorization errors: without any (stdio, in-memory) there is no
 * `McpAuthError`.
 *
 * @since 0.1.0
 * @category errors
 */
export type McpClientError<A = AuthError> =
  | McpTransportError
  | McpServerError
  | McpProtocolError
  | ([A] extends [never] ? never : McpAuthError)

/**
 * What sending a notification can fail with (`A` as in `McpClientError`).
 *
 * @since 0.1.0
 * @category errors
 */
export type McpNotifyError<A = AuthError> = McpTransportError | ([A] extends [never] ? never : McpAuthError)

/**
 * What building a client can fail with: the same groups as a call
 * (`UnsupportedProtocolVersion`, for one, is a reason of `McpProtocolError`).
 *
 * @since 0.1.0
 * @category errors
 */
export type HandshakeError<A = AuthError> = McpClientError<A>

/** The handshake's failures inside the client, before they are grouped. */
type FlatHandshakeError = RequestError | UnsupportedProtocolVersion | InvalidPayload | ModernCalls.ModernError

/**
 * The `clientInfo` sent in `initialize` unless `McpClientOptions.clientInfo` says otherwise.
 *
 * @since 0.1.0
 * @category defaults
 */
export const DEFAULT_CLIENT_INFO: Implementation = { name: "effect-mcp-transport", version: "0.1.0" }

/**
 * The idle timeout of a request unless the client or the call says otherwise: 30 seconds.
 *
 * @since 0.1.0
 * @category defaults
 */
export const DEFAULT_REQUEST_TIMEOUT: Duration.Duration = Duration.seconds(30)

/**
 * How a client introduces itself, what it answers, and how long it waits.
 *
 * @since 0.1.0
 * @category models
 */
export interface McpClientOptions {
  /** Default `{ name: "effect-mcp-transport", version: "0.1.0" }`. */
  readonly clientInfo?: Implementation | undefined
  /**
   * Which era and revision to speak: `"auto"` (default) tries the stateless
   * revision first and falls back to the `initialize` handshake when the
   * server does not speak it (the verdict is cached per server, see
   * `eraKey`); a revision pins it (a stateless one skips the handshake, a
   * handshake one skips the probe).
   */
  readonly protocol?: "auto" | ProtocolVersion.AnyVersion | undefined
  /** The handshake revision `initialize` asks for (default: the newest we speak, 2025-11-25). */
  readonly protocolVersion?: ProtocolVersion.ProtocolVersion | undefined
  /**
   * The server's identity in the era cache (an origin, a command line): with
   * it, a later client of the same server skips the probe. Default: none
   * (each client probes); `McpManager` and the CLI set it.
   */
  readonly eraKey?: string | undefined
  /** Where eras are remembered (default: `Negotiation.CurrentEraCache`, the process-wide `Negotiation.global` unless provided). */
  readonly eraCache?: Negotiation.EraCache | undefined
  /** How long a stdio server has to answer the era probe before it counts as a handshake server (default 5 s). */
  readonly probeTimeout?: Duration.Input | undefined
  /** Stateless era: the log level asked for on every request (default: none, so no log messages). */
  readonly logLevel?: McpSchema.LoggingLevel | undefined
  /** Stateless era: bound on `input_required` rounds of one call (default 10). */
  readonly maxInputRounds?: number | undefined
  /** Stateless era: keep discover and list results for the `ttlMs` the server allows (default true). */
  readonly cache?: boolean | undefined
  /**
   * Stateless era: hold a `subscriptions/listen` stream for the list-changed
   * notifications the server declares, so that `listChanged` and
   * `resourceUpdated` work as in the handshake era. Default: on over stdio
   * and in memory, off over HTTP (as the GET stream is); `false` never.
   */
  readonly listen?: boolean | undefined
  /** Extra capabilities (experimental, extensions) merged into what the handlers imply. */
  readonly capabilities?: Readonly<Record<string, unknown>> | undefined
  /**
   * Declares the tasks extension (`io.modelcontextprotocol/tasks`) so that a
   * server may answer a tool call with a task, which `callTool` then follows
   * to its result (default true; `false` declares nothing, and a task is then
   * an invalid answer).
   */
  readonly tasks?: boolean | undefined
  /** Answers for the requests the server sends (default: none, each answered -32601 but `ping`). */
  readonly handlers?: ServerRequestHandlers | undefined
  /** Idle timeout of each request, restarted by its progress notifications (default 30 s). */
  readonly requestTimeout?: Duration.Input | undefined
  /** Timeout of the `initialize` request (default: `requestTimeout`). */
  readonly initializeTimeout?: Duration.Input | undefined
  /** Pings the server at an interval and reports failures in `health` (default: off). */
  readonly keepAlive?: KeepAlive.KeepAliveOptions | undefined
  /** Per-subscriber buffer of typed notifications before the oldest are dropped (default 1024). */
  readonly notificationBuffer?: number | undefined
}

// ---------------------------------------------------------------------------
// Method parameters

type Meta = Readonly<Record<string, unknown>>

/**
 * Parameters of `tools/call`.
 *
 * @since 0.1.0
 * @category models
 */
export interface CallToolParams {
  readonly name: string
  readonly arguments?: Readonly<Record<string, unknown>> | undefined
  readonly _meta?: Meta | undefined
}

/**
 * Options of `callTool`: the call's options, and the Schema of the tool's declared failure.
 *
 * @since 0.1.0
 * @category models
 */
export interface CallToolOptions<F extends Schema.Top = never> extends CallOptions {
  /** The tool's `failure` Schema: a tool error carrying its JSON fails with the decoded value. Default: none. */
  readonly failure?: F | undefined
  /**
   * Sees each state of the task the server runs the call as (the tasks
   * extension), from the one it was created in to the terminal one; never
   * called for a call answered at once.
   */
  readonly onTaskState?: ((state: TaskState) => Effect.Effect<void>) | undefined
}

/**
 * Parameters of `prompts/get`.
 *
 * @since 0.1.0
 * @category models
 */
export interface GetPromptParams {
  readonly name: string
  readonly arguments?: Readonly<Record<string, string>> | undefined
  readonly _meta?: Meta | undefined
}

/**
 * Parameters of `completion/complete`.
 *
 * @since 0.1.0
 * @category models
 */
export interface CompleteParams {
  readonly ref:
    | { readonly type: "ref/prompt"; readonly name: string }
    | { readonly type: "ref/resource"; readonly uri: string }
  readonly argument: { readonly name: string; readonly value: string }
  readonly context?: { readonly arguments?: Readonly<Record<string, string>> | undefined } | undefined
}

/**
 * The part of the transport the application may see: state and diagnostics, never the raw request path.
 *
 * @since 0.1.0
 * @category models
 */
export type Connection = Pick<
  ClientTransportShape,
  "kind" | "state" | "diagnostics" | "stderr" | "awaitClosed" | "pendingCount"
>

/**
 * A client after a successful handshake: what the server said, and the typed methods and notifications.
 * Its methods fail with the groups of `McpErrorGroup`; `A` is what its
 * transport's sign-in can fail with (`never` over stdio and in memory).
 *
 * @since 0.1.0
 * @category models
 */
export interface McpClientShape<A = AuthError> {
  /** `"modern"` (stateless, 2026-07-28 on) or `"legacy"` (the `initialize` handshake). */
  readonly era: ProtocolVersion.Era
  /** What the server said it is: the `initialize` result, or (stateless era) the same fields from `server/discover`. */
  readonly initializeResult: McpSchema.InitializeResult
  /** Stateless era: the `server/discover` result as the server sent it (with `supportedVersions` and cache hints). */
  readonly discoverResult: DiscoverResult | undefined
  readonly protocolVersion: ProtocolVersion.AnyVersion
  /** Stateless era: the `subscriptions/listen` stream's state (`Off` in the handshake era). */
  readonly subscription: SubscriptionRef.SubscriptionRef<Listen.ListenState>
  readonly serverInfo: McpSchema.Implementation
  readonly serverCapabilities: McpSchema.ServerCapabilities
  readonly instructions: string | undefined
  /** The capabilities we declared. */
  readonly clientCapabilities: Readonly<Record<string, unknown>>
  readonly connection: Connection
  /** `Healthy` unless keep-alive pings keep failing. */
  readonly health: SubscriptionRef.SubscriptionRef<KeepAlive.Health>

  readonly ping: (options?: CallOptions) => Effect.Effect<void, McpClientError<A>>
  /**
   * Stateless era: the server's `server/discover` result, reused for the
   * `ttlMs` it allows (unless `cache: false`). In the handshake era it fails
   * with `CapabilityNotSupported`: the `initialize` result says the same.
   */
  readonly discover: (options?: CallOptions) => Effect.Effect<DiscoverResult, McpClientError<A>>

  readonly listTools: (params?: PageParams, options?: CallOptions) => Effect.Effect<McpSchema.ListToolsResult, McpClientError<A>>
  /** Every tool, page after page. */
  readonly tools: (options?: CallOptions) => Stream.Stream<McpSchema.Tool, McpClientError<A>>
  readonly listAllTools: (options?: CallOptions) => Effect.Effect<ReadonlyArray<McpSchema.Tool>, McpClientError<A>>
  /**
   * Calls a tool. With `failure`, a tool error carrying that Schema's JSON (what a server tool
   * declaring the same `failure` sends) fails with the decoded value instead of succeeding.
   */
  readonly callTool: <F extends Schema.Top = never>(
    params: CallToolParams,
    options?: CallToolOptions<F>
  ) => Effect.Effect<McpSchema.CallToolResult, McpClientError<A> | F["Type"], F["DecodingServices"]>
  readonly callToolStream: (
    params: CallToolParams,
    options?: CallOptions
  ) => Stream.Stream<CallEvent<McpSchema.CallToolResult>, McpClientError<A>>
  /**
   * Calls a tool and, when the server runs the call as a task (the tasks
   * extension), answers the task's handle instead of following it; otherwise
   * the result (`_tag: "Answered"`).
   */
  readonly callToolTask: (
    name: string,
    args?: Readonly<Record<string, unknown>>,
    options?: CallOptions
  ) => Effect.Effect<ToolCallTask<A>, McpClientError<A>>
  /** The handle of a task known by its id (kept from `callToolTask`, say, across a restart); sends nothing. */
  readonly task: (taskId: string) => TaskHandle<A>

  readonly listResources: (
    params?: PageParams,
    options?: CallOptions
  ) => Effect.Effect<McpSchema.ListResourcesResult, McpClientError<A>>
  readonly resources: (options?: CallOptions) => Stream.Stream<McpSchema.Resource, McpClientError<A>>
  readonly listAllResources: (options?: CallOptions) => Effect.Effect<ReadonlyArray<McpSchema.Resource>, McpClientError<A>>
  readonly listResourceTemplates: (
    params?: PageParams,
    options?: CallOptions
  ) => Effect.Effect<McpSchema.ListResourceTemplatesResult, McpClientError<A>>
  readonly resourceTemplates: (options?: CallOptions) => Stream.Stream<McpSchema.ResourceTemplate, McpClientError<A>>
  readonly listAllResourceTemplates: (
    options?: CallOptions
  ) => Effect.Effect<ReadonlyArray<McpSchema.ResourceTemplate>, McpClientError<A>>
  readonly readResource: (uri: string, options?: CallOptions) => Effect.Effect<McpSchema.ReadResourceResult, McpClientError<A>>
  readonly subscribeResource: (uri: string, options?: CallOptions) => Effect.Effect<void, McpClientError<A>>
  readonly unsubscribeResource: (uri: string, options?: CallOptions) => Effect.Effect<void, McpClientError<A>>

  readonly listPrompts: (params?: PageParams, options?: CallOptions) => Effect.Effect<McpSchema.ListPromptsResult, McpClientError<A>>
  readonly prompts: (options?: CallOptions) => Stream.Stream<McpSchema.Prompt, McpClientError<A>>
  readonly listAllPrompts: (options?: CallOptions) => Effect.Effect<ReadonlyArray<McpSchema.Prompt>, McpClientError<A>>
  readonly getPrompt: (params: GetPromptParams, options?: CallOptions) => Effect.Effect<McpSchema.GetPromptResult, McpClientError<A>>

  readonly complete: (params: CompleteParams, options?: CallOptions) => Effect.Effect<McpSchema.CompleteResult, McpClientError<A>>
  readonly setLoggingLevel: (level: McpSchema.LoggingLevel, options?: CallOptions) => Effect.Effect<void, McpClientError<A>>

  /** Any other method (extensions, newer revisions): no capability check, result not decoded. */
  readonly request: (
    method: string,
    params?: Readonly<Record<string, unknown>>,
    options?: CallOptions
  ) => Effect.Effect<unknown, McpClientError<A>>
  readonly notify: (method: string, params?: Readonly<Record<string, unknown>>) => Effect.Effect<void, McpNotifyError<A>>
  /** Tells the server our roots changed (needs a `listRoots` handler). */
  readonly notifyRootsListChanged: Effect.Effect<void, McpNotifyError<A> | McpProtocolError>

  /**
   * Every server notification, typed. The stream subscribes when it is run,
   * and nothing is replayed: one forked just before a call may start after
   * the call's first notifications went by. To hear a call's notifications,
   * subscribe first with `subscribeNotifications`.
   */
  readonly notifications: Stream.Stream<ServerNotification>
  /** Progress notifications; subscribes when run (see `notifications`; `subscribeProgress` subscribes at once). */
  readonly progress: Stream.Stream<Progress>
  /** Log messages; subscribes when run (see `notifications`; `subscribeLogging` subscribes at once). */
  readonly logging: Stream.Stream<LoggingMessage>
  /** List changes; subscribes when run (see `notifications`; `subscribeListChanged` subscribes at once). */
  readonly listChanged: Stream.Stream<ListChanged>
  /** Resource updates; subscribes when run (see `notifications`; `subscribeResourceUpdated` subscribes at once). */
  readonly resourceUpdated: Stream.Stream<ResourceUpdated>
  /** Cancellations; subscribes when run (see `notifications`; `subscribeCancelled` subscribes at once). */
  readonly cancelled: Stream.Stream<Cancelled>

  /**
   * Subscribes now, in the caller's scope, and returns the notifications
   * from this moment on: everything the server says after this effect
   * completes is in the stream, however late it is run. The subscription
   * ends with the scope, and the stream with the client; until the stream
   * is read, up to `notificationBuffer` notifications wait in it, the
   * oldest dropped first.
   */
  readonly subscribeNotifications: Effect.Effect<Stream.Stream<ServerNotification>, never, Scope.Scope>
  /** `progress`, subscribed now in the caller's scope (see `subscribeNotifications`). */
  readonly subscribeProgress: Effect.Effect<Stream.Stream<Progress>, never, Scope.Scope>
  /** `logging`, subscribed now in the caller's scope (see `subscribeNotifications`). */
  readonly subscribeLogging: Effect.Effect<Stream.Stream<LoggingMessage>, never, Scope.Scope>
  /** `listChanged`, subscribed now in the caller's scope (see `subscribeNotifications`). */
  readonly subscribeListChanged: Effect.Effect<Stream.Stream<ListChanged>, never, Scope.Scope>
  /** `resourceUpdated`, subscribed now in the caller's scope (see `subscribeNotifications`). */
  readonly subscribeResourceUpdated: Effect.Effect<Stream.Stream<ResourceUpdated>, never, Scope.Scope>
  /** `cancelled`, subscribed now in the caller's scope (see `subscribeNotifications`). */
  readonly subscribeCancelled: Effect.Effect<Stream.Stream<Cancelled>, never, Scope.Scope>
}

/**
 * A tool, resource or prompt list change.
 *
 * @since 0.1.0
 * @category models
 */
export type ListChanged = Data.TaggedEnum.Value<
  ServerNotification,
  "ToolListChanged" | "ResourceListChanged" | "PromptListChanged"
>

/**
 * A `notifications/resources/updated`.
 *
 * @since 0.1.0
 * @category models
 */
export type ResourceUpdated = Data.TaggedEnum.Value<ServerNotification, "ResourceUpdated">

/**
 * A `notifications/cancelled` from the server.
 *
 * @since 0.1.0
 * @category models
 */
export type Cancelled = Data.TaggedEnum.Value<ServerNotification, "Cancelled">

/**
 * What `server/discover` answers (stateless era), as the server sent it.
 *
 * @since 0.1.0
 * @category models
 */
export interface DiscoverResult {
  readonly supportedVersions: ReadonlyArray<string>
  readonly capabilities: Readonly<Record<string, unknown>>
  readonly instructions?: string | undefined
  /** How long the answer may be reused, in milliseconds. */
  readonly ttlMs?: number | undefined
  readonly cacheScope?: "public" | "private" | undefined
  readonly _meta?: Readonly<Record<string, unknown>> | undefined
}

/**
 * The client as a service, provided by `layer`.
 *
 * @since 0.1.0
 * @category services
 */
export class McpClient extends Context.Service<McpClient, McpClientShape>()("effect-mcp-transport/McpClient") {}

// ---------------------------------------------------------------------------
// Capabilities

/** Which server capability each method needs, and how to find it. */
const requiredCapability: Record<string, readonly [string, (c: McpSchema.ServerCapabilities) => boolean]> = {
  "tools/list": ["tools", (c) => c.tools !== undefined],
  "tools/call": ["tools", (c) => c.tools !== undefined],
  "resources/list": ["resources", (c) => c.resources !== undefined],
  "resources/templates/list": ["resources", (c) => c.resources !== undefined],
  "resources/read": ["resources", (c) => c.resources !== undefined],
  "resources/subscribe": ["resources.subscribe", (c) => c.resources?.subscribe === true],
  "resources/unsubscribe": ["resources.subscribe", (c) => c.resources?.subscribe === true],
  "prompts/list": ["prompts", (c) => c.prompts !== undefined],
  "prompts/get": ["prompts", (c) => c.prompts !== undefined],
  "completion/complete": ["completions", (c) => c.completions !== undefined],
  "logging/setLevel": ["logging", (c) => c.logging !== undefined]
}

/** What we declare: the caller's extra capabilities, those the handlers imply, and the tasks extension. */
const clientCapabilities = (options: McpClientOptions): Record<string, unknown> => {
  const declared = { ...options.capabilities, ...ServerRequests.impliedCapabilities(options.handlers ?? {}) }
  return options.tasks === false ? declared : TaskResults.declare(declared)
}

// ---------------------------------------------------------------------------
// Construction

/**
 * Runs the handshake over a transport the caller owns and returns the
 * client. Fails with `UnsupportedProtocolVersion` when the server answers a
 * revision we do not speak; closing the transport is then the owner's
 * scope's job (`layer` and `connect` do it).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromTransport = <A extends AuthError = AuthError>(
  transport: ClientTransportShape<A>,
  options: McpClientOptions = {}
): Effect.Effect<McpClientShape<A>, HandshakeError<A>, Scope.Scope> =>
  // The transport's errors are its own `A` and the flat transport errors; grouped, they are those of `McpClientError<A>`.
  // Every request and notification is sent through a client span (when a tracer is installed).
  Effect.mapError(build(ClientSpans.traced(transport), options), group) as Effect.Effect<McpClientShape<A>, HandshakeError<A>, Scope.Scope>

/** Puts a method's failures in their groups: the one place where the client's flat errors become public. */
const grouped = <Args extends ReadonlyArray<any>, X, E, R>(f: (...args: Args) => Effect.Effect<X, E, R>) =>
(...args: Args): Effect.Effect<X, Grouped<E>, R> => Effect.mapError(f(...args), group)

const groupedStream = <Args extends ReadonlyArray<any>, X, E, R>(f: (...args: Args) => Stream.Stream<X, E, R>) =>
(...args: Args): Stream.Stream<X, Grouped<E>, R> => Stream.mapError(f(...args), group)

const build = Effect.fnUntraced(function*(
  transport: ClientTransportShape,
  options: McpClientOptions
): Effect.fn.Return<McpClientShape, FlatHandshakeError, Scope.Scope> {
  const requestTimeout = Duration.fromInputUnsafe(options.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT)
  let decodeNotification: typeof ClientSchemas.decodeNotification | undefined
  const hub = yield* PubSub.sliding<ServerNotification>(options.notificationBuffer ?? 1024)
  yield* Effect.addFinalizer(() => PubSub.shutdown(hub))
  const calls = McpCallEngine.make(transport, requestTimeout)

  /** Drops the cached pages of a list (stateless era; set once the cache exists). */
  let dropCached: (method: string) => void = () => {}
  const onNotification = (n: ServerNotification) => {
    if (n._tag === "Progress") calls.routeProgress(n)
    // Before anyone hears of the change, so that a list asked for on hearing it is fresh.
    else if (n._tag === "ToolListChanged") dropCached("tools/list")
    else if (n._tag === "PromptListChanged") dropCached("prompts/list")
    else if (n._tag === "ResourceListChanged") {
      dropCached("resources/list")
      dropCached("resources/templates/list")
    }
    PubSub.publishUnsafe(hub, n)
  }

  // Subscribed before anything is sent, so nothing the server says is
  // missed; what arrives before the Schemas have loaded waits for them, in order.
  // Stateless era: the listen stream decides which notifications are ours.
  let admit: (raw: JsonRpc.JsonRpcNotification) => boolean = () => true
  const incoming = yield* transport.subscribeNotifications
  yield* incoming.pipe(
    Stream.runForEach((raw) => {
      if (!admit(raw)) return Effect.void
      const decode = decodeNotification
      if (decode !== undefined) return Effect.sync(() => onNotification(decode(raw)))
      return Effect.map(LazySchemas.load(), (schemas) => {
        decodeNotification = schemas.decodeNotification
        onNotification(schemas.decodeNotification(raw))
      })
    }),
    Effect.forkScoped({ startImmediately: true })
  )

  yield* transport.setRequestHandler(ServerRequests.serve(options.handlers ?? {}))

  // --- the era: a pinned revision, a cached verdict, or the probe
  const requested = options.protocolVersion ??
    (options.protocol !== undefined && ProtocolVersion.isSupported(options.protocol) ? options.protocol : ProtocolVersion.LATEST)
  const capabilities = clientCapabilities(options)
  const clientInfo = options.clientInfo ?? DEFAULT_CLIENT_INFO
  const protocol = options.protocol ?? "auto"
  const overHttp = transport.kind === "streamable-http"
  const eraCache = options.eraCache ?? (yield* Negotiation.CurrentEraCache)
  const cached = protocol === "auto" && options.eraKey !== undefined
    ? Negotiation.get(eraCache, options.eraKey)
    : undefined
  // The HTTP+SSE transport belongs to the handshake era: nothing to probe there.
  const initialEra: ProtocolVersion.Era | "auto" = protocol === "auto"
    ? transport.kind === "sse" ? "legacy" : cached?.era ?? "auto"
    : ProtocolVersion.eraOf(protocol)
  let statelessVersion: string = protocol !== "auto" && ProtocolVersion.isStateless(protocol)
    ? protocol
    : cached?.era === "modern"
    ? cached.version
    : ProtocolVersion.LATEST_STATELESS

  /** `server/discover` with our metadata: the probe, and the stateless era's liveness check. */
  const discover = (version: string, timeout: Duration.Input) =>
    Effect.andThen(
      transportVersion(version),
      transport.request(
        "server/discover",
        { _meta: RequestMeta.requestMeta({ protocolVersion: version, clientCapabilities: capabilities, clientInfo }) },
        { timeout }
      )
    )
  // The transport's mode follows the version it is told (HTTP sends headers by it).
  let lastTransportVersion: string | undefined
  const transportVersion = (version: string): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (version === lastTransportVersion) return Effect.void
      lastTransportVersion = version
      return transport.setProtocolVersion(version)
    })

  const probeTimeout = options.probeTimeout ?? (transport.kind === "streamable-http" ? requestTimeout : Duration.seconds(5))
  /**
   * Runs the probe (once more after a `-32022` that names a version we
   * speak) and returns the verdict, or the probe's own failure when there is
   * nothing to fall back to (401/403, 5xx, no answer over HTTP, a dead process).
   */
  const probe = (
    pinned: boolean,
    timeout: Duration.Input = pinned ? requestTimeout : probeTimeout
  ): Effect.Effect<{ verdict: Negotiation.Verdict; timedOut: boolean }, FlatHandshakeError> =>
    Effect.gen(function*() {
      let version = statelessVersion
      for (let attempt = 0;; attempt++) {
        const exit = yield* Effect.exit(discover(version, timeout))
        if (Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)) return yield* Effect.failCause(exit.cause)
        const verdict = Negotiation.classify({
          transport: overHttp ? "http" : "stdio",
          requested: version,
          outcome: Negotiation.outcomeOf(exit)
        })
        if (verdict._tag === "RetryModern" && attempt === 0) {
          version = verdict.version
          continue
        }
        const failed = verdict._tag === "Fail" || verdict._tag === "RetryModern" || (pinned && verdict._tag === "Legacy")
        if (failed && Exit.isFailure(exit)) {
          const error = Cause.squash(exit.cause)
          return yield* Effect.fail((ModernCalls.typedError("server/discover", error) ?? error) as FlatHandshakeError)
        }
        const timedOut = Exit.isFailure(exit) && Cause.squash(exit.cause) instanceof RequestTimeout
        return { verdict, timedOut }
      }
    })

  /** The probe's verdict as the era to speak, or the failure to report. */
  const decide = (timeout?: Duration.Input) => Effect.gen(function*() {
    const { timedOut, verdict } = yield* probe(initialEra === "modern" && protocol !== "auto", timeout)
    switch (verdict._tag) {
      case "Modern":
        statelessVersion = verdict.version
        return { era: "modern" as const, discovered: verdict.discover, timedOut }
      case "Legacy":
        return { era: "legacy" as const, discovered: undefined, timedOut }
      default: {
        if (verdict._tag === "Fail" && verdict.error instanceof UnsupportedProtocolVersion) return yield* verdict.error
        return yield* new UnsupportedProtocolVersion({ requested: statelessVersion, supported: ProtocolVersion.ALL })
      }
    }
  })

  const handshake = Effect.gen(function*() {
    // After a probe the transport is in the stateless mode: back to the handshake's.
    if (lastTransportVersion !== undefined) yield* transportVersion(requested)
    // `initialize` is on its way before the Schemas start loading, so the
    // import runs while the server starts and answers.
    const initializing = yield* transport.request(
      "initialize",
      { protocolVersion: requested, capabilities, clientInfo },
      { timeout: options.initializeTimeout ?? requestTimeout }
    ).pipe(Effect.forkChild({ startImmediately: true }))
    const schemas = yield* LazySchemas.load()
    const raw = yield* Fiber.join(initializing)
    decodeNotification ??= schemas.decodeNotification
    const init = yield* schemas.decodeInitialize(raw)
    if (!ProtocolVersion.isSupported(init.protocolVersion)) {
      return yield* new UnsupportedProtocolVersion({
        requested,
        received: init.protocolVersion,
        supported: ProtocolVersion.SUPPORTED
      })
    }
    const version: ProtocolVersion.AnyVersion = init.protocolVersion
    yield* transport.setProtocolVersion(version)
    yield* transport.notify("notifications/initialized")
    return { init, version, schemas }
  })

  const stateless = (discovered: unknown) =>
    Effect.gen(function*() {
      const schemas = yield* LazySchemas.load()
      decodeNotification ??= schemas.decodeNotification
      const d = (discovered ?? {}) as Record<string, unknown>
      const meta = (d._meta ?? {}) as Record<string, unknown>
      const init = yield* schemas.decodeInitialize({
        protocolVersion: statelessVersion,
        capabilities: d.capabilities ?? {},
        serverInfo: meta[RequestMeta.MetaKey.serverInfo] ?? { name: "", version: "" },
        ...(typeof d.instructions === "string" ? { instructions: d.instructions } : {})
      })
      return { init, version: statelessVersion as ProtocolVersion.AnyVersion, schemas }
    })

  // The probe and the handshake under one `connect` span.
  const { discovered, established, era } = yield* ClientSpans.connecting(transport, Effect.gen(function*() {
    let era: ProtocolVersion.Era
    let discovered: unknown
    let established: { init: McpSchema.InitializeResult; version: ProtocolVersion.AnyVersion; schemas: typeof ClientSchemas }
    if (initialEra === "legacy") {
      era = "legacy"
      const attempt = yield* Effect.exit(handshake)
      // A remembered verdict that no longer holds (the server now refuses the
      // handshake with an answer) is forgotten, and the server probed again.
      const refusal = Exit.isFailure(attempt) && cached !== undefined ? Cause.squash(attempt.cause) : undefined
      if (
        Exit.isFailure(attempt) && cached !== undefined && typeof refusal === "object" && refusal !== null &&
        ["RpcError", "HttpError", "InvalidPayload"].includes((refusal as { _tag?: string })._tag ?? "")
      ) {
        Negotiation.invalidate(eraCache, options.eraKey!)
        const decided = yield* decide()
        era = decided.era
        discovered = decided.discovered
        established = era === "legacy" ? yield* handshake : yield* stateless(discovered)
      } else {
        established = yield* attempt
      }
    } else {
      let decided = yield* decide()
      if (decided.era === "legacy" && decided.timedOut) {
        // No answer in `probeTimeout` counts as a handshake server; a stateless
        // server that was only slow to start refuses the handshake with an
        // answer, and is then given the whole request timeout to answer the probe.
        const attempt = yield* Effect.exit(handshake)
        if (Exit.isSuccess(attempt)) {
          era = "legacy"
          established = attempt.value
        } else if (Cause.squash(attempt.cause) instanceof RpcError) {
          decided = yield* decide(requestTimeout)
          era = decided.era
          discovered = decided.discovered
          established = era === "legacy" ? yield* handshake : yield* stateless(discovered)
        } else {
          return yield* Effect.failCause(attempt.cause)
        }
      } else {
        era = decided.era
        discovered = decided.discovered
        established = era === "legacy" ? yield* handshake : yield* stateless(discovered)
      }
    }
    return { era, discovered, established }
  }))
  const { init, version, schemas } = established
  yield* Metrics.clientSession(version, transport.kind)
  if (options.eraKey !== undefined && protocol === "auto") {
    Negotiation.set(eraCache, options.eraKey, { era, version })
  }
  const discoverResult = era === "modern" ? discovered as DiscoverResult : undefined

  // --- typed methods
  const serverCapabilities = init.capabilities

  /** A call of a method the server did not declare: it fails before anything is sent. */
  const undeclared = (method: string): Effect.Effect<never, CapabilityNotSupported> | undefined => {
    const required = requiredCapability[method]
    if (required === undefined || required[1](serverCapabilities)) return undefined
    return Effect.failSync(() => new CapabilityNotSupported({ method, capability: required[0], peer: "server" }))
  }

  // --- the stateless era's parts: per-request metadata, input rounds, cache, listen
  const modernEra = era === "modern"
  let logLevel: string | undefined = options.logLevel
  const meta = ModernCalls.metaBuilder({ protocolVersion: version, clientCapabilities: capabilities, clientInfo })
  const cache = ResultCache.make(modernEra && options.cache !== false)
  dropCached = (method) => cache.invalidate(`${method} `)
  /** Tool name → the parameters it mirrors into `Mcp-Param-*` headers (HTTP, stateless era). */
  const headerParams = new Map<string, ReadonlyArray<RequestMeta.HeaderParam>>()
  let refreshTools: Effect.Effect<void, FlatError> = Effect.void
  const modern = modernEra
    ? ModernCalls.make({
      calls,
      answer: ServerRequests.serve(options.handlers ?? {}),
      meta,
      logLevel: () => logLevel,
      maxInputRounds: options.maxInputRounds ?? ModernCalls.DEFAULT_MAX_INPUT_ROUNDS,
      paramHeaders: overHttp
        ? (tool, args) => {
          const params = headerParams.get(tool)
          return params === undefined || params.length === 0 ? undefined : RequestMeta.paramHeaders(params, args)
        }
        : undefined,
      refreshTools: Effect.suspend(() => refreshTools)
    })
    : undefined
  const send: McpCallEngine.CallEngine["send"] = yield* Metrics.recordedSend(modern !== undefined ? modern.send : calls.send, { protocolVersion: version, transportKind: transport.kind })

  // The capabilities are fixed by the handshake (or the discovery), so each method's check is done once, here.
  // A task (the tasks extension) answers tools/call only: its decoder takes one (`taskAware`), every other refuses it.
  const typed = <A>(method: string, decode: McpCallEngine.Decode<A>, taskAware = false) => {
    const refused = undeclared(method)
    const checked = taskAware ? decode : TaskResults.refuse(method, decode)
    return refused !== undefined
      ? (_params: Readonly<Record<string, unknown>> | undefined, _callOptions?: CallOptions) => refused
      : (params: Readonly<Record<string, unknown>> | undefined, callOptions?: CallOptions) =>
        send(method, params, callOptions, checked)
  }

  /** A list page, reused for the `ttlMs` the server allowed (stateless era). */
  const cachedPage = <P>(method: string, decode: McpCallEngine.Decode<P>) => {
    if (!modernEra || options.cache === false) return typed(method, decode)
    // The page is kept under the cursor that asked for it, for the `ttlMs` its own result allows.
    const withTtl = typed(method, (raw) =>
      Effect.map(decode(raw), (value) => ({ value, ttlMs: (raw as { ttlMs?: unknown }).ttlMs })))
    return (params: Readonly<Record<string, unknown>> | undefined, callOptions?: CallOptions) =>
      Effect.suspend(() => {
        const key = `${method} ${params?.cursor ?? ""}`
        const hit = cache.get(key) as P | undefined
        if (hit !== undefined) return Effect.succeed(hit)
        return Effect.map(withTtl(params, callOptions), (page) => {
          cache.set(key, page.value, page.ttlMs)
          return page.value
        })
      })
  }

  const paginated = <P, A>(
    method: string,
    decode: McpCallEngine.Decode<P>,
    items: (page: P) => ReadonlyArray<A>,
    nextCursor: (page: P) => string | undefined
  ) => McpCallEngine.paginated(method, cachedPage(method, decode), items, nextCursor)

  const decoders = schemas.results
  /**
   * Over HTTP in the stateless era a tool's `x-mcp-header` parameters are
   * remembered for its calls' headers, and a tool whose annotations are not
   * valid is left out of the listing (it could not be called correctly).
   */
  const listTools: McpCallEngine.Decode<McpSchema.ListToolsResult> = !(modernEra && overHttp)
    ? decoders.listTools
    : (raw) =>
      Effect.flatMap(decoders.listTools(raw), (result) => {
        const kept: Array<McpSchema.Tool> = []
        const dropped: Array<string> = []
        for (const tool of result.tools) {
          const found = RequestMeta.headerParams(tool.inputSchema)
          if (found._tag === "Invalid") {
            headerParams.delete(tool.name)
            dropped.push(`${tool.name}: ${found.reason}`)
            continue
          }
          headerParams.set(tool.name, found.params)
          kept.push(tool)
        }
        if (dropped.length === 0) return Effect.succeed(result)
        return Effect.as(
          Effect.logWarning("MCP: tools left out of the listing, their x-mcp-header annotations are not valid", dropped),
          { ...result, tools: kept } as McpSchema.ListToolsResult
        )
      })
  const tools = paginated("tools/list", listTools, (r) => r.tools, (r) => r.nextCursor)
  refreshTools = Effect.suspend(() => {
    cache.invalidate("tools/list")
    return Effect.asVoid(tools.collect())
  })
  const resources = paginated("resources/list", decoders.listResources, (r) => r.resources, (r) => r.nextCursor)
  const templates = paginated(
    "resources/templates/list",
    decoders.listResourceTemplates,
    (r) => r.resourceTemplates,
    (r) => r.nextCursor
  )
  const prompts = paginated("prompts/list", decoders.listPrompts, (r) => r.prompts, (r) => r.nextCursor)

  const tasks = TaskCalls.make({
    deps: { send, answer: ServerRequests.serve(options.handlers ?? {}), decodeCallTool: decoders.callTool },
    call: typed(
      "tools/call",
      options.tasks === false ? decoders.callTool : TaskResults.orTask(decoders.callTool),
      options.tasks !== false
    )
  })
  const callTool = tasks.callTool
  const readResource = typed("resources/read", decoders.readResource)
  const getPrompt = typed("prompts/get", decoders.getPrompt)
  const complete = typed("completion/complete", decoders.complete)

  // Methods the stateless era removed, done its way: liveness is a discovery,
  // the log level travels with each request, resource updates come through the listen stream.
  let listener: Listen.Listener | undefined
  const discoverNow = (o?: CallOptions) =>
    send("server/discover", undefined, o, (raw) => {
      cache.set("server/discover", raw, (raw as { ttlMs?: unknown }).ttlMs)
      return Effect.succeed(raw as DiscoverResult)
    })
  if (modernEra) cache.set("server/discover", discovered, (discovered as { ttlMs?: unknown } | undefined)?.ttlMs)
  const discoverCached = (o?: CallOptions): Effect.Effect<DiscoverResult, FlatError> =>
    !modernEra
      ? Effect.fail(new CapabilityNotSupported({ method: "server/discover", capability: "2026-07-28", peer: "server" }))
      : Effect.suspend(() => {
        const hit = cache.get("server/discover") as DiscoverResult | undefined
        return hit !== undefined ? Effect.succeed(hit) : discoverNow(o)
      })
  const ping: (o?: CallOptions) => Effect.Effect<void, FlatError> = modernEra
    ? (o) => Effect.asVoid(discoverNow(o))
    : (() => {
      const legacyPing = typed("ping", decoders.ping)
      return (o) => Effect.asVoid(legacyPing(undefined, o))
    })()
  const setLoggingLevel: (level: McpSchema.LoggingLevel, o?: CallOptions) => Effect.Effect<void, FlatError> =
    modernEra
      ? (level) => undeclared("logging/setLevel") ?? Effect.sync(() => void (logLevel = level))
      : (() => {
        const setLevel = typed("logging/setLevel", decoders.setLevel)
        return (level, o) => Effect.asVoid(setLevel({ level }, o))
      })()
  const changeSubscriptions = (uri: string, add: boolean): Effect.Effect<void, FlatError> => {
    const refused = undeclared("resources/subscribe")
    if (refused !== undefined) return refused
    return Effect.suspend(() => {
      if (listener === undefined) return Effect.void
      const current = listener.filter()
      const uris = new Set(current.resourceSubscriptions ?? [])
      if (add) uris.add(uri)
      else uris.delete(uri)
      return listener.setFilter({ ...current, resourceSubscriptions: [...uris] })
    })
  }
  const subscribeResource: (uri: string, o?: CallOptions) => Effect.Effect<void, FlatError> = modernEra
    ? (uri) => changeSubscriptions(uri, true)
    : (() => {
      const subscribe = typed("resources/subscribe", decoders.subscribe)
      return (uri, o) => Effect.asVoid(subscribe({ uri }, o))
    })()
  const unsubscribeResource: (uri: string, o?: CallOptions) => Effect.Effect<void, FlatError> = modernEra
    ? (uri) => changeSubscriptions(uri, false)
    : (() => {
      const unsubscribe = typed("resources/unsubscribe", decoders.unsubscribe)
      return (uri, o) => Effect.asVoid(unsubscribe({ uri }, o))
    })()

  const toParams = (p: object): Readonly<Record<string, unknown>> => p as Readonly<Record<string, unknown>>

  // The keep-alive pings; in the stateless era a discovery stands in for the removed `ping`.
  const health = yield* KeepAlive.make(
    modernEra
      ? { ...transport, request: (method, params, o) => method === "ping" ? discoverNow(o) as Effect.Effect<unknown, RequestError> : transport.request(method, params, o) }
      : transport,
    options.keepAlive,
    requestTimeout
  )

  let subscription: SubscriptionRef.SubscriptionRef<Listen.ListenState>
  if (modernEra) {
    const l = yield* Listen.make({ transport, meta: () => meta(undefined), ackTimeout: requestTimeout })
    listener = l
    admit = l.admit
    subscription = l.state
    if (options.listen ?? !overHttp) {
      yield* l.setFilter({
        ...(serverCapabilities.tools?.listChanged === true ? { toolsListChanged: true } : {}),
        ...(serverCapabilities.prompts?.listChanged === true ? { promptsListChanged: true } : {}),
        ...(serverCapabilities.resources?.listChanged === true ? { resourcesListChanged: true } : {})
      })
    }
  } else {
    subscription = yield* SubscriptionRefMake.make<Listen.ListenState>(Listen.ListenState.Off())
  }

  const notifications = Stream.fromPubSub(hub)
  const subscribeNotifications = Effect.map(PubSub.subscribe(hub), Stream.fromSubscription)
  const isListChanged = (n: ServerNotification): n is ListChanged =>
    n._tag === "ToolListChanged" || n._tag === "ResourceListChanged" || n._tag === "PromptListChanged"
  const isProgress = ServerNotification.$is("Progress")
  const isLogging = ServerNotification.$is("LoggingMessage")
  const isResourceUpdated = ServerNotification.$is("ResourceUpdated")
  const isCancelled = ServerNotification.$is("Cancelled")
  const rootsDeclared = capabilities.roots !== undefined
  // The stateless era has no such notification: roots are asked for per request.
  const rootsListChanged: Effect.Effect<void, NotifyError | CapabilityNotSupported> = rootsDeclared
    ? modernEra ? Effect.void : transport.notify("notifications/roots/list_changed")
    : Effect.fail(new CapabilityNotSupported({ method: "notifications/roots/list_changed", capability: "roots", peer: "client" }))

  return {
    era,
    initializeResult: init,
    discoverResult,
    protocolVersion: version,
    subscription,
    serverInfo: init.serverInfo,
    serverCapabilities,
    instructions: init.instructions,
    clientCapabilities: capabilities,
    connection: {
      kind: transport.kind,
      state: transport.state,
      diagnostics: transport.diagnostics,
      stderr: transport.stderr,
      awaitClosed: transport.awaitClosed,
      pendingCount: transport.pendingCount
    },
    health,
    ping: grouped(ping),
    discover: grouped(discoverCached),
    listTools: grouped(tools.list),
    tools: groupedStream(tools.all),
    listAllTools: grouped(tools.collect),
    callTool: <F extends Schema.Top = never>(params: CallToolParams, o?: CallToolOptions<F>) => {
      const call = Effect.mapError(callTool(toParams(params), o), group)
      return o?.failure === undefined ? call : decodingFailure(o.failure, call)
    },
    callToolStream: groupedStream((params: CallToolParams, o?: CallOptions) =>
      McpCallEngine.streamed((so) => callTool(toParams(params), so), o)
    ),
    callToolTask: grouped((name: string, args?: Readonly<Record<string, unknown>>, o?: CallOptions) =>
      tasks.callToolTask(args === undefined ? { name } : { name, arguments: args }, o)
    ),
    task: (taskId: string) => tasks.handle(taskId, undefined),
    listResources: grouped(resources.list),
    resources: groupedStream(resources.all),
    listAllResources: grouped(resources.collect),
    listResourceTemplates: grouped(templates.list),
    resourceTemplates: groupedStream(templates.all),
    listAllResourceTemplates: grouped(templates.collect),
    readResource: grouped((uri: string, o?: CallOptions) => readResource({ uri }, o)),
    subscribeResource: grouped(subscribeResource),
    unsubscribeResource: grouped(unsubscribeResource),
    listPrompts: grouped(prompts.list),
    prompts: groupedStream(prompts.all),
    listAllPrompts: grouped(prompts.collect),
    getPrompt: grouped((params: GetPromptParams, o?: CallOptions) => getPrompt(toParams(params), o)),
    complete: grouped((params: CompleteParams, o?: CallOptions) => complete(toParams(params), o)),
    setLoggingLevel: grouped(setLoggingLevel),
    request: grouped((method: string, params?: Readonly<Record<string, unknown>>, o?: CallOptions) =>
      undeclared(method) ?? send(method, params, o, McpCallEngine.undecoded)
    ),
    notify: grouped((method: string, params?: Readonly<Record<string, unknown>>) => transport.notify(method, params)),
    notifyRootsListChanged: Effect.mapError(rootsListChanged, group),
    notifications,
    progress: Stream.filter(notifications, isProgress),
    logging: Stream.filter(notifications, isLogging),
    listChanged: Stream.filter(notifications, isListChanged),
    resourceUpdated: Stream.filter(notifications, isResourceUpdated),
    cancelled: Stream.filter(notifications, isCancelled),
    subscribeNotifications,
    subscribeProgress: Effect.map(subscribeNotifications, Stream.filter(isProgress)),
    subscribeLogging: Effect.map(subscribeNotifications, Stream.filter(isLogging)),
    subscribeListChanged: Effect.map(subscribeNotifications, Stream.filter(isListChanged)),
    subscribeResourceUpdated: Effect.map(subscribeNotifications, Stream.filter(isResourceUpdated)),
    subscribeCancelled: Effect.map(subscribeNotifications, Stream.filter(isCancelled))
  }
})

// Loaded on the first call that asks for it: a client that never decodes failures does not load the codec.
const decodingFailure = <F extends Schema.Top, E, R>(
  failure: F,
  call: Effect.Effect<McpSchema.CallToolResult, E, R>
): Effect.Effect<McpSchema.CallToolResult, E | F["Type"], R | F["DecodingServices"]> =>
  Effect.flatMap(Effect.promise(() => import("./ToolFailure.ts")), (ToolFailure) => ToolFailure.decode(failure)(call))

/**
 * The handshake over the `ClientTransport` in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: McpClientOptions = {}): Effect.Effect<McpClientShape, HandshakeError, ClientTransport | Scope.Scope> =>
  Effect.flatMap(ClientTransport, (transport) => fromTransport(transport, options))

/**
 * Builds the transport and the client in one scope: closing it closes the
 * client and the transport (the process is killed, the session deleted); a
 * failed handshake closes the transport at once.
 *
 * The transport may be chosen at run time: `connect(isUrl ? StreamableHttpClientTransport.make(…) :
 * StdioClientTransport.make(…))` needs the services of both branches.
 *
 * @since 0.1.0
 * @category constructors
 */
export const connect = <T extends Effect.Effect<ClientTransportShape<any>, any, any>>(
  transport: T,
  options: McpClientOptions = {}
): Effect.Effect<
  McpClientShape<AuthErrorOf<Effect.Success<T>>>,
  Grouped<Effect.Error<T>> | HandshakeError<AuthErrorOf<Effect.Success<T>>>,
  Exclude<Effect.Services<T>, Scope.Scope> | Scope.Scope
> =>
  Effect.gen(function*() {
    const outer = yield* Effect.scope
    const scope = yield* Scope.fork(outer)
    return yield* Effect.gen(function*() {
      const t = yield* transport
      return yield* fromTransport(t, options)
    }).pipe(
      // The transport's own failures (a process that did not start…) are grouped like the client's.
      Effect.mapError(group),
      Scope.provide(scope),
      Effect.onExit((exit) => exit._tag === "Failure" ? Scope.close(scope, exit) : Effect.void)
    )
  })

/**
 * The client as a layer over a transport layer: `McpClient.layer(opts).pipe(Layer.provide(transportLayer))`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: McpClientOptions = {}): Layer.Layer<McpClient, HandshakeError, ClientTransport> =>
  Layer.effect(McpClient, make(options))
