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
 * @since 0.2.0
 */
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
import {
  CapabilityNotSupported,
  type InvalidPayload,
  type NotifyError,
  type RequestError,
  UnsupportedProtocolVersion
} from "../McpError.ts"
import * as ProtocolVersion from "../ProtocolVersion.ts"
import type { Implementation } from "../Implementation.ts"
import { ClientTransport, type ClientTransportShape } from "./ClientTransport.ts"
import type { LoggingMessage, Progress } from "./ServerNotification.ts"
import * as KeepAlive from "./internal/KeepAlive.ts"
import * as LazySchemas from "./internal/LazySchemas.ts"
import * as McpCallEngine from "./internal/McpCallEngine.ts"
import type { CallEvent, CallOptions, McpClientError, PageParams } from "./internal/McpCallEngine.ts"
import type * as ClientSchemas from "./internal/McpClientSchemas.ts"
import { ServerNotification } from "./internal/ServerNotificationEnum.ts"
import * as ServerRequests from "./internal/ServerRequests.ts"
import type { ServerRequestHandlers } from "./internal/ServerRequests.ts"

export { type LoggingMessage, type Progress, ServerNotification }
export { type CallEvent, type CallOptions, type McpClientError, type PageParams } from "./internal/McpCallEngine.ts"
export {
  type ElicitParams,
  type ElicitResult,
  type Root,
  type SamplingParams,
  type SamplingResult,
  type ServerRequestHandlers
} from "./internal/ServerRequests.ts"
export { Health, type KeepAliveOptions } from "./internal/KeepAlive.ts"
export type { Implementation }

// ---------------------------------------------------------------------------
// Errors and options

/**
 * What building a client can fail with.
 *
 * @since 0.2.0
 * @category errors
 */
export type HandshakeError = RequestError | UnsupportedProtocolVersion | InvalidPayload

/**
 * The `clientInfo` sent in `initialize` unless `McpClientOptions.clientInfo` says otherwise.
 *
 * @since 0.2.0
 * @category defaults
 */
export const DEFAULT_CLIENT_INFO: Implementation = { name: "effect-mcp-transport", version: "0.1.0" }

/**
 * The idle timeout of a request unless the client or the call says otherwise: 30 seconds.
 *
 * @since 0.2.0
 * @category defaults
 */
export const DEFAULT_REQUEST_TIMEOUT: Duration.Duration = Duration.seconds(30)

/**
 * How a client introduces itself, what it answers, and how long it waits.
 *
 * @since 0.2.0
 * @category models
 */
export interface McpClientOptions {
  /** Default `{ name: "effect-mcp-transport", version: "0.1.0" }`. */
  readonly clientInfo?: Implementation | undefined
  /** The revision we ask for (default: the newest we speak, 2025-11-25). */
  readonly protocolVersion?: ProtocolVersion.ProtocolVersion | undefined
  /** Extra capabilities (experimental, extensions) merged into what the handlers imply. */
  readonly capabilities?: Readonly<Record<string, unknown>> | undefined
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
 * @since 0.2.0
 * @category models
 */
export interface CallToolParams {
  readonly name: string
  readonly arguments?: Readonly<Record<string, unknown>> | undefined
  readonly _meta?: Meta | undefined
}

/**
 * Parameters of `prompts/get`.
 *
 * @since 0.2.0
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
 * @since 0.2.0
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
 * @since 0.2.0
 * @category models
 */
export type Connection = Pick<
  ClientTransportShape,
  "kind" | "state" | "diagnostics" | "stderr" | "awaitClosed" | "pendingCount"
>

/**
 * A client after a successful handshake: what the server said, and the typed methods and notifications.
 *
 * @since 0.2.0
 * @category models
 */
export interface McpClientShape {
  readonly initializeResult: McpSchema.InitializeResult
  readonly protocolVersion: ProtocolVersion.ProtocolVersion
  readonly serverInfo: McpSchema.Implementation
  readonly serverCapabilities: McpSchema.ServerCapabilities
  readonly instructions: string | undefined
  /** The capabilities we declared. */
  readonly clientCapabilities: Readonly<Record<string, unknown>>
  readonly connection: Connection
  /** `Healthy` unless keep-alive pings keep failing. */
  readonly health: SubscriptionRef.SubscriptionRef<KeepAlive.Health>

  readonly ping: (options?: CallOptions) => Effect.Effect<void, McpClientError>

  readonly listTools: (params?: PageParams, options?: CallOptions) => Effect.Effect<McpSchema.ListToolsResult, McpClientError>
  /** Every tool, page after page. */
  readonly tools: (options?: CallOptions) => Stream.Stream<McpSchema.Tool, McpClientError>
  readonly listAllTools: (options?: CallOptions) => Effect.Effect<ReadonlyArray<McpSchema.Tool>, McpClientError>
  readonly callTool: (params: CallToolParams, options?: CallOptions) => Effect.Effect<McpSchema.CallToolResult, McpClientError>
  readonly callToolStream: (
    params: CallToolParams,
    options?: CallOptions
  ) => Stream.Stream<CallEvent<McpSchema.CallToolResult>, McpClientError>

  readonly listResources: (
    params?: PageParams,
    options?: CallOptions
  ) => Effect.Effect<McpSchema.ListResourcesResult, McpClientError>
  readonly resources: (options?: CallOptions) => Stream.Stream<McpSchema.Resource, McpClientError>
  readonly listAllResources: (options?: CallOptions) => Effect.Effect<ReadonlyArray<McpSchema.Resource>, McpClientError>
  readonly listResourceTemplates: (
    params?: PageParams,
    options?: CallOptions
  ) => Effect.Effect<McpSchema.ListResourceTemplatesResult, McpClientError>
  readonly resourceTemplates: (options?: CallOptions) => Stream.Stream<McpSchema.ResourceTemplate, McpClientError>
  readonly listAllResourceTemplates: (
    options?: CallOptions
  ) => Effect.Effect<ReadonlyArray<McpSchema.ResourceTemplate>, McpClientError>
  readonly readResource: (uri: string, options?: CallOptions) => Effect.Effect<McpSchema.ReadResourceResult, McpClientError>
  readonly subscribeResource: (uri: string, options?: CallOptions) => Effect.Effect<void, McpClientError>
  readonly unsubscribeResource: (uri: string, options?: CallOptions) => Effect.Effect<void, McpClientError>

  readonly listPrompts: (params?: PageParams, options?: CallOptions) => Effect.Effect<McpSchema.ListPromptsResult, McpClientError>
  readonly prompts: (options?: CallOptions) => Stream.Stream<McpSchema.Prompt, McpClientError>
  readonly listAllPrompts: (options?: CallOptions) => Effect.Effect<ReadonlyArray<McpSchema.Prompt>, McpClientError>
  readonly getPrompt: (params: GetPromptParams, options?: CallOptions) => Effect.Effect<McpSchema.GetPromptResult, McpClientError>

  readonly complete: (params: CompleteParams, options?: CallOptions) => Effect.Effect<McpSchema.CompleteResult, McpClientError>
  readonly setLoggingLevel: (level: McpSchema.LoggingLevel, options?: CallOptions) => Effect.Effect<void, McpClientError>

  /** Any other method (extensions, newer revisions): no capability check, result not decoded. */
  readonly request: (
    method: string,
    params?: Readonly<Record<string, unknown>>,
    options?: CallOptions
  ) => Effect.Effect<unknown, McpClientError>
  readonly notify: (method: string, params?: Readonly<Record<string, unknown>>) => Effect.Effect<void, NotifyError>
  /** Tells the server our roots changed (needs a `listRoots` handler). */
  readonly notifyRootsListChanged: Effect.Effect<void, NotifyError | CapabilityNotSupported>

  /** Every server notification, typed. Subscribe before you expect one: nothing is replayed. */
  readonly notifications: Stream.Stream<ServerNotification>
  readonly progress: Stream.Stream<Progress>
  readonly logging: Stream.Stream<LoggingMessage>
  readonly listChanged: Stream.Stream<
    Data.TaggedEnum.Value<ServerNotification, "ToolListChanged" | "ResourceListChanged" | "PromptListChanged">
  >
  readonly resourceUpdated: Stream.Stream<Data.TaggedEnum.Value<ServerNotification, "ResourceUpdated">>
  readonly cancelled: Stream.Stream<Data.TaggedEnum.Value<ServerNotification, "Cancelled">>
}

/**
 * The client as a service, provided by `layer`.
 *
 * @since 0.2.0
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

/** What we declare: the caller's extra capabilities, and those the handlers imply. */
const clientCapabilities = (options: McpClientOptions): Record<string, unknown> => ({
  ...options.capabilities,
  ...ServerRequests.impliedCapabilities(options.handlers ?? {})
})

// ---------------------------------------------------------------------------
// Construction

/**
 * Runs the handshake over a transport the caller owns and returns the
 * client. Fails with `UnsupportedProtocolVersion` when the server answers a
 * revision we do not speak; closing the transport is then the owner's
 * scope's job (`layer` and `connect` do it).
 *
 * @since 0.2.0
 * @category constructors
 */
export const fromTransport = Effect.fnUntraced(function*(
  transport: ClientTransportShape,
  options: McpClientOptions = {}
): Effect.fn.Return<McpClientShape, HandshakeError, Scope.Scope> {
  const requestTimeout = Duration.fromInputUnsafe(options.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT)
  let decodeNotification: typeof ClientSchemas.decodeNotification | undefined
  const hub = yield* PubSub.sliding<ServerNotification>(options.notificationBuffer ?? 1024)
  yield* Effect.addFinalizer(() => PubSub.shutdown(hub))
  const calls = McpCallEngine.make(transport, requestTimeout)

  const onNotification = (n: ServerNotification) => {
    if (n._tag === "Progress") calls.routeProgress(n)
    PubSub.publishUnsafe(hub, n)
  }

  // Subscribed (the fiber starts at once and parks on the subscription)
  // before anything is sent, so nothing the server says is missed; what
  // arrives before the Schemas have loaded waits for them, in order.
  yield* transport.notifications.pipe(
    Stream.runForEach((raw) => {
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

  // --- handshake
  const requested = options.protocolVersion ?? ProtocolVersion.LATEST
  const capabilities = clientCapabilities(options)
  // `initialize` is on its way before the Schemas start loading, so the
  // import runs while the server starts and answers.
  const initializing = yield* transport.request(
    "initialize",
    { protocolVersion: requested, capabilities, clientInfo: options.clientInfo ?? DEFAULT_CLIENT_INFO },
    { timeout: options.initializeTimeout ?? requestTimeout }
  ).pipe(Effect.forkChild({ startImmediately: true }))
  const schemas = yield* LazySchemas.load()
  const raw = yield* Fiber.join(initializing)
  // From here on notifications are decoded as they arrive, as a call's
  // progress must be routed before its result settles the call.
  decodeNotification ??= schemas.decodeNotification
  const init = yield* schemas.decodeInitialize(raw)
  const version = init.protocolVersion
  if (!ProtocolVersion.isSupported(version)) {
    return yield* new UnsupportedProtocolVersion({
      requested,
      received: version,
      supported: ProtocolVersion.SUPPORTED
    })
  }
  yield* transport.setProtocolVersion(version)
  yield* transport.notify("notifications/initialized")

  // --- typed methods
  const serverCapabilities = init.capabilities

  /** A call of a method the server did not declare: it fails before anything is sent. */
  const undeclared = (method: string): Effect.Effect<never, CapabilityNotSupported> | undefined => {
    const required = requiredCapability[method]
    if (required === undefined || required[1](serverCapabilities)) return undefined
    return Effect.failSync(() => new CapabilityNotSupported({ method, capability: required[0], peer: "server" }))
  }

  // The capabilities are fixed by the handshake, so each method's check is done once, here.
  const typed = <A>(method: string, decode: McpCallEngine.Decode<A>) => {
    const refused = undeclared(method)
    return refused !== undefined
      ? (_params: Readonly<Record<string, unknown>> | undefined, _callOptions?: CallOptions) => refused
      : (params: Readonly<Record<string, unknown>> | undefined, callOptions?: CallOptions) =>
        calls.send(method, params, callOptions, decode)
  }

  const paginated = <P, A>(
    method: string,
    decode: McpCallEngine.Decode<P>,
    items: (page: P) => ReadonlyArray<A>,
    nextCursor: (page: P) => string | undefined
  ) => McpCallEngine.paginated(method, typed(method, decode), items, nextCursor)

  const decoders = schemas.results
  const tools = paginated("tools/list", decoders.listTools, (r) => r.tools, (r) => r.nextCursor)
  const resources = paginated("resources/list", decoders.listResources, (r) => r.resources, (r) => r.nextCursor)
  const templates = paginated(
    "resources/templates/list",
    decoders.listResourceTemplates,
    (r) => r.resourceTemplates,
    (r) => r.nextCursor
  )
  const prompts = paginated("prompts/list", decoders.listPrompts, (r) => r.prompts, (r) => r.nextCursor)

  const callTool = typed("tools/call", decoders.callTool)
  const readResource = typed("resources/read", decoders.readResource)
  const subscribe = typed("resources/subscribe", decoders.subscribe)
  const unsubscribe = typed("resources/unsubscribe", decoders.unsubscribe)
  const getPrompt = typed("prompts/get", decoders.getPrompt)
  const complete = typed("completion/complete", decoders.complete)
  const setLevel = typed("logging/setLevel", decoders.setLevel)
  const ping = typed("ping", decoders.ping)

  const toParams = (p: object): Readonly<Record<string, unknown>> => p as Readonly<Record<string, unknown>>

  const health = yield* KeepAlive.make(transport, options.keepAlive, requestTimeout)

  const notifications = Stream.fromPubSub(hub)
  const rootsDeclared = capabilities.roots !== undefined

  return {
    initializeResult: init,
    protocolVersion: version,
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
    ping: (o) => Effect.asVoid(ping(undefined, o)),
    listTools: tools.list,
    tools: tools.all,
    listAllTools: tools.collect,
    callTool: (params, o) => callTool(toParams(params), o),
    callToolStream: (params, o) => McpCallEngine.streamed((so) => callTool(toParams(params), so), o),
    listResources: resources.list,
    resources: resources.all,
    listAllResources: resources.collect,
    listResourceTemplates: templates.list,
    resourceTemplates: templates.all,
    listAllResourceTemplates: templates.collect,
    readResource: (uri, o) => readResource({ uri }, o),
    subscribeResource: (uri, o) => Effect.asVoid(subscribe({ uri }, o)),
    unsubscribeResource: (uri, o) => Effect.asVoid(unsubscribe({ uri }, o)),
    listPrompts: prompts.list,
    prompts: prompts.all,
    listAllPrompts: prompts.collect,
    getPrompt: (params, o) => getPrompt(toParams(params), o),
    complete: (params, o) => complete(toParams(params), o),
    setLoggingLevel: (level, o) => Effect.asVoid(setLevel({ level }, o)),
    request: (method, params, o) => undeclared(method) ?? calls.send(method, params, o, McpCallEngine.undecoded),
    notify: (method, params) => transport.notify(method, params),
    notifyRootsListChanged: rootsDeclared
      ? transport.notify("notifications/roots/list_changed")
      : Effect.fail(
        new CapabilityNotSupported({ method: "notifications/roots/list_changed", capability: "roots", peer: "client" })
      ),
    notifications,
    progress: Stream.filter(notifications, ServerNotification.$is("Progress")),
    logging: Stream.filter(notifications, ServerNotification.$is("LoggingMessage")),
    listChanged: Stream.filter(
      notifications,
      (n): n is Data.TaggedEnum.Value<ServerNotification, "ToolListChanged" | "ResourceListChanged" | "PromptListChanged"> =>
        n._tag === "ToolListChanged" || n._tag === "ResourceListChanged" || n._tag === "PromptListChanged"
    ),
    resourceUpdated: Stream.filter(notifications, ServerNotification.$is("ResourceUpdated")),
    cancelled: Stream.filter(notifications, ServerNotification.$is("Cancelled"))
  }
})

/**
 * The handshake over the `ClientTransport` in context.
 *
 * @since 0.2.0
 * @category constructors
 */
export const make = (options: McpClientOptions = {}): Effect.Effect<McpClientShape, HandshakeError, ClientTransport | Scope.Scope> =>
  Effect.flatMap(ClientTransport, (transport) => fromTransport(transport, options))

/**
 * Builds the transport and the client in one scope: closing it closes the
 * client and the transport (the process is killed, the session deleted); a
 * failed handshake closes the transport at once.
 *
 * @since 0.2.0
 * @category constructors
 */
export const connect = <E, R>(
  transport: Effect.Effect<ClientTransportShape, E, R>,
  options: McpClientOptions = {}
): Effect.Effect<McpClientShape, E | HandshakeError, Exclude<R, Scope.Scope> | Scope.Scope> =>
  Effect.gen(function*() {
    const outer = yield* Effect.scope
    const scope = yield* Scope.fork(outer)
    return yield* Effect.gen(function*() {
      const t = yield* transport
      return yield* fromTransport(t, options)
    }).pipe(
      Scope.provide(scope),
      Effect.onExit((exit) => exit._tag === "Failure" ? Scope.close(scope, exit) : Effect.void)
    )
  })

/**
 * The client as a layer over a transport layer: `McpClient.layer(opts).pipe(Layer.provide(transportLayer))`.
 *
 * @since 0.2.0
 * @category layers
 */
export const layer = (options: McpClientOptions = {}): Layer.Layer<McpClient, HandshakeError, ClientTransport> =>
  Layer.effect(McpClient, make(options))
