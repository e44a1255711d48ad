/**
 * The MCP protocol layer over any client transport: the handshake, version
 * negotiation, capability checks, typed methods with decoded results,
 * progress-aware timeouts, typed server notifications, handlers for the
 * requests a server sends us, and an optional keep-alive.
 *
 * The handshake is enforced by construction: a client value only exists
 * once `initialize` succeeded and `notifications/initialized` was sent, and
 * the client never hands out the raw transport, so no method can reach the
 * server before the session is set up.
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Queue from "effect/Queue"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import type * as McpSchema from "effect/ai/McpSchema"
import * as JsonRpc from "../JsonRpc.ts"
import {
  CapabilityNotSupported,
  InvalidPayload,
  type NotifyError,
  type RequestError,
  RequestTimeout,
  RpcError,
  UnsupportedProtocolVersion
} from "../McpError.ts"
import type * as ClientSchemas from "./internal/McpClientSchemas.ts"
import { ServerNotification } from "./internal/ServerNotificationEnum.ts"
import * as ProtocolVersion from "../ProtocolVersion.ts"
import { ClientTransport, type ClientTransportShape, type RequestHandler, type RequestOptions } from "./ClientTransport.ts"
import type { LoggingMessage, Progress } from "./ServerNotification.ts"
import type { Implementation } from "../Implementation.ts"

export { type LoggingMessage, type Progress, ServerNotification }

// ---------------------------------------------------------------------------
// Errors and options

/** What a typed method can fail with. */
export type McpClientError = RequestError | CapabilityNotSupported | InvalidPayload

/** What building a client can fail with. */
export type HandshakeError = RequestError | UnsupportedProtocolVersion | InvalidPayload

export type { Implementation }

export const DEFAULT_CLIENT_INFO: Implementation = { name: "effect-mcp-transport", version: "0.1.0" }
export const DEFAULT_REQUEST_TIMEOUT: Duration.Duration = Duration.seconds(30)

/** Parameters of `sampling/createMessage`, decoded. */
export type SamplingParams = typeof McpSchema.CreateMessage.payloadSchema.Type
/** The answer to `sampling/createMessage`, in its wire (JSON) form. */
export type SamplingResult = typeof McpSchema.CreateMessageResult.Encoded

/** Parameters of `elicitation/create` (form or URL mode), decoded leniently. */
export interface ElicitParams {
  readonly mode: "form" | "url"
  readonly message: string
  /** Form mode: the JSON Schema of the requested fields. */
  readonly requestedSchema?: Readonly<Record<string, unknown>> | undefined
  /** URL mode. */
  readonly url?: string | undefined
  readonly elicitationId?: string | undefined
  readonly _meta?: Readonly<Record<string, unknown>> | undefined
}
export type ElicitResult =
  | {
    readonly action: "accept"
    readonly content?: Readonly<Record<string, string | number | boolean | ReadonlyArray<string>>> | undefined
  }
  | { readonly action: "decline" | "cancel" }

export interface Root {
  readonly uri: string
  readonly name?: string | undefined
  readonly _meta?: Readonly<Record<string, unknown>> | undefined
}

/**
 * Answers for the requests a server may send. Each one present is advertised
 * in our capabilities; absent ones are not, and the server gets -32601.
 * Fail with `RpcError` to send a JSON-RPC error; interruption (the server
 * cancelled) sends nothing.
 */
export interface ServerRequestHandlers {
  readonly listRoots?: (() => Effect.Effect<ReadonlyArray<Root>, RpcError>) | undefined
  readonly createMessage?: ((params: SamplingParams) => Effect.Effect<SamplingResult, RpcError>) | undefined
  readonly elicit?: ((params: ElicitParams) => Effect.Effect<ElicitResult, RpcError>) | undefined
  /** Whether URL-mode elicitation is advertised too (default: form mode only). */
  readonly elicitUrlMode?: boolean | undefined
  /** Runs before we answer a server's `ping` (which is always answered). */
  readonly ping?: (() => Effect.Effect<void, RpcError>) | undefined
}

export interface KeepAliveOptions {
  /** Time between pings. */
  readonly interval: Duration.Input
  /** How long one ping may take (default: the client's request timeout). */
  readonly timeout?: Duration.Input | undefined
  /** Consecutive failed pings that mark the connection degraded (default 3). */
  readonly failureThreshold?: number | undefined
}

export interface McpClientOptions {
  /** Default `{ name: "effect-mcp-transport", version: "0.1.0" }`. */
  readonly clientInfo?: Implementation | undefined
  /** The revision we ask for (default: the newest we speak, 2025-11-25). */
  readonly protocolVersion?: ProtocolVersion.ProtocolVersion | undefined
  /** Extra capabilities (experimental, extensions) merged into what the handlers imply. */
  readonly capabilities?: Readonly<Record<string, unknown>> | undefined
  readonly handlers?: ServerRequestHandlers | undefined
  /** Idle timeout of each request, restarted by its progress notifications (default 30 s). */
  readonly requestTimeout?: Duration.Input | undefined
  /** Timeout of the `initialize` request (default: `requestTimeout`). */
  readonly initializeTimeout?: Duration.Input | undefined
  readonly keepAlive?: KeepAliveOptions | undefined
  /** Per-subscriber buffer of typed notifications before the oldest are dropped (default 1024). */
  readonly notificationBuffer?: number | undefined
}

/** Options of one call. */
export interface CallOptions {
  /** Idle timeout (default: the client's `requestTimeout`). `Duration.infinity` disables it. */
  readonly timeout?: Duration.Input | undefined
  /** Whether a progress notification restarts the idle timeout (default true). */
  readonly resetTimeoutOnProgress?: boolean | undefined
  /** Caps the whole call, progress or not (default: no cap). */
  readonly maxTotalTimeout?: Duration.Input | undefined
  /** Sees each progress notification of this call whose progress increased. */
  readonly onProgress?: ((progress: Progress) => Effect.Effect<void>) | undefined
}

/** What a streamed call emits: its progress, then its result. */
export type CallEvent<A> =
  | { readonly _tag: "Progress"; readonly progress: Progress }
  | { readonly _tag: "Result"; readonly result: A }

export type Health = Data.TaggedEnum<{
  Healthy: {}
  /** Keep-alive pings failed `consecutiveFailures` times in a row (at least the threshold). */
  Degraded: { readonly consecutiveFailures: number; readonly lastError: RequestError }
}>
export const Health = Data.taggedEnum<Health>()

// ---------------------------------------------------------------------------
// Method parameters

type Meta = Readonly<Record<string, unknown>>

export interface CallToolParams {
  readonly name: string
  readonly arguments?: Readonly<Record<string, unknown>> | undefined
  readonly _meta?: Meta | undefined
}
export interface GetPromptParams {
  readonly name: string
  readonly arguments?: Readonly<Record<string, string>> | undefined
  readonly _meta?: Meta | undefined
}
export interface CompleteParams {
  readonly ref:
    | { readonly type: "ref/prompt"; readonly name: string }
    | { readonly type: "ref/resource"; readonly uri: string }
  readonly argument: { readonly name: string; readonly value: string }
  readonly context?: { readonly arguments?: Readonly<Record<string, string>> | undefined } | undefined
}
export interface PageParams {
  readonly cursor?: string | undefined
}

/** The part of the transport the application may see: state and diagnostics, never the raw request path. */
export type Connection = Pick<
  ClientTransportShape,
  "kind" | "state" | "diagnostics" | "stderr" | "awaitClosed" | "pendingCount"
>

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
  readonly health: SubscriptionRef.SubscriptionRef<Health>

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

const clientCapabilities = (options: McpClientOptions): Record<string, unknown> => {
  const handlers = options.handlers ?? {}
  const capabilities: Record<string, unknown> = { ...options.capabilities }
  if (handlers.listRoots !== undefined) capabilities.roots = { listChanged: true }
  if (handlers.createMessage !== undefined) capabilities.sampling = {}
  if (handlers.elicit !== undefined) {
    capabilities.elicitation = handlers.elicitUrlMode === true ? { form: {}, url: {} } : { form: {} }
  }
  return capabilities
}

// ---------------------------------------------------------------------------
// Serving the server's requests

const methodNotFound = (method: string) =>
  new RpcError({ code: JsonRpc.ErrorCode.MethodNotFound, rpcMessage: "Method not found", data: { method }, method })

const serveServerRequests = (handlers: ServerRequestHandlers): RequestHandler => (request) => {
  switch (request.method) {
    case "ping":
      return handlers.ping === undefined ? Effect.succeed({}) : Effect.as(handlers.ping(), {})
    case "roots/list": {
      const listRoots = handlers.listRoots
      if (listRoots === undefined) return Effect.fail(methodNotFound(request.method))
      return Effect.map(listRoots(), (roots) => ({ roots }))
    }
    case "sampling/createMessage": {
      const createMessage = handlers.createMessage
      if (createMessage === undefined) return Effect.fail(methodNotFound(request.method))
      return loadSchemas().pipe(
        Effect.flatMap((schemas) => schemas.samplingParams(request.params ?? {})),
        Effect.flatMap(createMessage)
      )
    }
    case "elicitation/create": {
      const elicit = handlers.elicit
      if (elicit === undefined) return Effect.fail(methodNotFound(request.method))
      return loadSchemas().pipe(
        Effect.flatMap((schemas) => schemas.elicitParams(request.params ?? {})),
        Effect.flatMap((p) => {
          const mode = p.mode ?? "form"
          if (mode === "url" && handlers.elicitUrlMode !== true) {
            return Effect.fail(
              new RpcError({
                code: JsonRpc.ErrorCode.InvalidParams,
                rpcMessage: "URL-mode elicitation was not advertised by this client",
                method: request.method
              })
            )
          }
          return elicit({ ...p, mode })
        })
      )
    }
    default:
      return Effect.fail(methodNotFound(request.method))
  }
}

// ---------------------------------------------------------------------------
// Construction

/**
 * The Schemas (`effect/Schema`, `effect/ai/McpSchema`) load with the first
 * client made, not with this module: a client starts the import once its
 * `initialize` is on the way, so the import runs while the server starts.
 */
let schemasLoading: Promise<typeof ClientSchemas> | undefined
const loadSchemas = (): Effect.Effect<typeof ClientSchemas> => {
  const loading = schemasLoading ??= import("./internal/McpClientSchemas.ts")
  return Effect.promise(() => loading)
}

/** The result of `request()`: not decoded. */
const undecoded = (raw: unknown): Effect.Effect<unknown> => Exit.succeed(raw)

/** One call's view of its progress notifications (see `watches`). */
interface Watch {
  /** The highest progress seen so far (none yet: `undefined`); progress not above it says nothing new. */
  last: number | undefined
  /** Restarts the call's idle timeout; set by the transport once the timeout runs. */
  restart: (() => void) | undefined
  /** Feeds `onProgress`, for a call that has one. */
  readonly queue: Queue.Queue<Progress> | undefined
  /** The request body until the transport takes it: not kept while the call waits. */
  body: Readonly<Record<string, unknown>> | undefined
}

const millis = (d: Duration.Duration): number => (Duration.isFinite(d) ? Duration.toMillis(d) : Number.POSITIVE_INFINITY)

/**
 * Runs the handshake over a transport the caller owns and returns the
 * client. Fails with `UnsupportedProtocolVersion` when the server answers a
 * revision we do not speak; closing the transport is then the owner's
 * scope's job (`layer` and `connect` do it).
 */
export const fromTransport = Effect.fnUntraced(function*(
  transport: ClientTransportShape,
  options: McpClientOptions = {}
): Effect.fn.Return<McpClientShape, HandshakeError, Scope.Scope> {
  const requestTimeout = Duration.fromInputUnsafe(options.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT)
  let decodeNotification: typeof ClientSchemas.decodeNotification | undefined
  const hub = yield* PubSub.sliding<ServerNotification>(options.notificationBuffer ?? 1024)
  yield* Effect.addFinalizer(() => PubSub.shutdown(hub))
  /** The calls in flight by progress token. */
  const watches = new Map<string | number, Watch>()

  const onNotification = (n: ServerNotification) => {
    if (n._tag === "Progress") {
      const watch = watches.get(n.progressToken)
      // Out-of-order or repeated progress says nothing new: ignore it.
      if (watch !== undefined && n.progress > (watch.last ?? Number.NEGATIVE_INFINITY)) {
        watch.last = n.progress
        watch.restart?.()
        if (watch.queue !== undefined) Queue.offerUnsafe(watch.queue, n)
      }
    }
    PubSub.publishUnsafe(hub, n)
  }

  // Subscribed (the fiber starts at once and parks on the subscription)
  // before anything is sent, so nothing the server says is missed; what
  // arrives before the Schemas have loaded waits for them, in order.
  yield* transport.notifications.pipe(
    Stream.runForEach((raw) => {
      const decode = decodeNotification
      if (decode !== undefined) return Effect.sync(() => onNotification(decode(raw)))
      return Effect.map(loadSchemas(), (schemas) => {
        decodeNotification = schemas.decodeNotification
        onNotification(schemas.decodeNotification(raw))
      })
    }),
    Effect.forkScoped({ startImmediately: true })
  )

  yield* transport.setRequestHandler(serveServerRequests(options.handlers ?? {}))

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
  const schemas = yield* loadSchemas()
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

  // --- requests
  const serverCapabilities = init.capabilities
  let tokenCounter = 0

  const missingCapability = (method: string): CapabilityNotSupported | undefined => {
    const required = requiredCapability[method]
    if (required === undefined || required[1](serverCapabilities)) return undefined
    return new CapabilityNotSupported({ method, capability: required[0], peer: "server" })
  }

  const requestTimeoutMs = millis(requestTimeout)

  /** Here the transport's own timeout (it has no phase) is the idle timeout. */
  const idleTimeout = (method: string, idleMs: number) => (e: McpClientError): McpClientError =>
    e._tag === "RequestTimeout" && e.phase === undefined
      ? new RequestTimeout({ method, id: e.id, timeoutMs: idleMs, phase: "No response or progress" })
      : e

  /**
   * One call, its result decoded by `decode`. The common case (no
   * `onProgress`, no `maxTotalTimeout`) adds no fiber, queue or timer to the
   * transport's request: the idle timeout IS the transport's timeout, and each
   * new progress of this call restarts it through `onDeadline`. It also keeps
   * the per-call work to two frames around the request (see `plain`), which
   * is what most of this layer's cost per call was. Only an `onProgress`
   * callback needs a fiber of its own, to run the callbacks one after the
   * other while the call waits.
   */
  const send = <A>(
    method: string,
    params: Readonly<Record<string, unknown>> | undefined,
    callOptions: CallOptions | undefined,
    decode: (raw: unknown) => Effect.Effect<A, McpClientError>
  ): Effect.Effect<A, McpClientError> =>
    Effect.suspend(() => {
      const missing = missingCapability(method)
      if (missing !== undefined) return Effect.fail(missing)
      const token = `p${++tokenCounter}`
      const timeout = callOptions?.timeout
      const idle = timeout === undefined ? requestTimeout : Duration.fromInputUnsafe(timeout)
      const idleMs = timeout === undefined ? requestTimeoutMs : millis(idle)
      const restartOnProgress = (callOptions?.resetTimeoutOnProgress ?? true) && Number.isFinite(idleMs)
      const meta = { ...(params?._meta as Meta | undefined), progressToken: token }
      const body = { ...params, _meta: meta }
      const onProgress = callOptions?.onProgress
      if (onProgress === undefined && callOptions?.maxTotalTimeout === undefined) {
        return plain(method, token, body, idle, idleMs, restartOnProgress, decode)
      }
      return Effect.flatMap(
        onProgress === undefined ? Effect.succeed(undefined) : Queue.unbounded<Progress>(),
        (queue) =>
          Effect.flatMap(
            watched(method, token, body, idle, idleMs, restartOnProgress, queue, onProgress, callOptions),
            decode
          )
      )
    })

  /**
   * The common call: the request under one frame that decodes its result
   * (or names its timeout) and one that drops its watch. The body is handed
   * over through the watch, so that the frames keep neither it nor the
   * transport's request effect while the call waits.
   */
  const plain = <A>(
    method: string,
    token: string,
    body: Readonly<Record<string, unknown>>,
    idle: Duration.Duration,
    idleMs: number,
    restartOnProgress: boolean,
    decode: (raw: unknown) => Effect.Effect<A, McpClientError>
  ): Effect.Effect<A, McpClientError> => {
    const watch: Watch = { last: undefined, restart: undefined, queue: undefined, body }
    watches.set(token, watch)
    const request = Effect.onExit(
      Effect.suspend(() => {
        const taken = watch.body
        watch.body = undefined
        const options: RequestOptions = restartOnProgress
          ? { timeout: idle, onDeadline: (restart) => void (watch.restart = restart) }
          : { timeout: idle }
        return transport.request(method, taken, options)
      }),
      () => {
        watches.delete(token)
        return Effect.void
      }
    )
    return Effect.matchCauseEffect(request, {
      onSuccess: decode,
      onFailure: restartOnProgress
        ? (cause) => Effect.failCause(Cause.map(cause, idleTimeout(method, idleMs)))
        : Effect.failCause
    })
  }

  /** A call with `onProgress` or `maxTotalTimeout`: progress may feed a queue, and a total timeout may race it. */
  const watched = (
    method: string,
    token: string,
    body: Readonly<Record<string, unknown>>,
    idle: Duration.Duration,
    idleMs: number,
    restartOnProgress: boolean,
    queue: Queue.Queue<Progress> | undefined,
    onProgress: ((p: Progress) => Effect.Effect<void>) | undefined,
    callOptions: CallOptions | undefined
  ): Effect.Effect<unknown, McpClientError> => {
    const watch: Watch = { last: undefined, restart: undefined, queue, body: undefined }
    watches.set(token, watch)
    let effect: Effect.Effect<unknown, McpClientError> = restartOnProgress
      ? Effect.mapError(
        transport.request(method, body, { timeout: idle, onDeadline: (r) => void (watch.restart = r) }),
        idleTimeout(method, idleMs)
      )
      : transport.request(method, body, { timeout: idle })
    if (queue !== undefined && onProgress !== undefined) {
      // The response settles the call directly while progress comes through
      // the notification fiber: progress that arrived before the response but
      // was not yet handed over is delivered before the result.
      const late = Effect.flatMap(Queue.clear(queue), (items) => Effect.forEach(items, onProgress, { discard: true }))
      const deliver = Effect.forever(Effect.flatMap(Queue.take(queue), onProgress))
      effect = Effect.tap(Effect.raceFirst(effect, deliver), () => late)
    }
    if (callOptions?.maxTotalTimeout !== undefined) {
      const max = Duration.fromInputUnsafe(callOptions.maxTotalTimeout)
      effect = Effect.timeoutOrElse(effect, {
        duration: max,
        orElse: () =>
          Effect.fail(new RequestTimeout({ method, id: token, timeoutMs: millis(max), phase: "Maximum total time exceeded" }))
      })
    }
    return Effect.ensuring(effect, Effect.sync(() => watches.delete(token)))
  }

  const typed = <A>(method: string, decode: (raw: unknown) => Effect.Effect<A, McpClientError>) => {
    return (params: Readonly<Record<string, unknown>> | undefined, callOptions?: CallOptions) =>
      send(method, params, callOptions, decode)
  }

  const streamed = <A>(
    run: (options: CallOptions) => Effect.Effect<A, McpClientError>,
    callOptions: CallOptions | undefined
  ): Stream.Stream<CallEvent<A>, McpClientError> =>
    Stream.callback<CallEvent<A>, McpClientError>((queue) =>
      run({
        ...callOptions,
        onProgress: (progress) =>
          Effect.andThen(
            callOptions?.onProgress?.(progress) ?? Effect.void,
            Queue.offer(queue, { _tag: "Progress", progress })
          ).pipe(Effect.asVoid)
      }).pipe(
        Effect.flatMap((result) => Queue.offer(queue, { _tag: "Result", result })),
        Effect.andThen(Queue.end(queue))
      )
    )

  const paginated = <P, A>(
    method: string,
    decode: (raw: unknown) => Effect.Effect<P, McpClientError>,
    items: (page: P) => ReadonlyArray<A>,
    nextCursor: (page: P) => string | undefined
  ) => {
    const page = typed(method, decode)
    const list = (params?: PageParams, callOptions?: CallOptions) =>
      page(params?.cursor === undefined ? undefined : { cursor: params.cursor }, callOptions)
    const all = (callOptions?: CallOptions): Stream.Stream<A, McpClientError> =>
      Stream.paginate({ cursor: undefined as string | undefined, seen: new Set<string>() }, (state) =>
        Effect.flatMap(list({ cursor: state.cursor }, callOptions), (result) => {
          const next = nextCursor(result)
          if (next === undefined) return Effect.succeed([items(result), Option.none()] as const)
          if (state.seen.has(next)) {
            return Effect.fail(
              new InvalidPayload({ method, kind: "result", reason: `nextCursor ${JSON.stringify(next)} repeats` })
            )
          }
          state.seen.add(next)
          return Effect.succeed([items(result), Option.some({ cursor: next, seen: state.seen })] as const)
        }))
    const collect = (callOptions?: CallOptions) => Stream.runCollect(all(callOptions))
    return { list, all, collect } as const
  }

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

  // --- keep-alive
  const health = yield* SubscriptionRef.make<Health>(Health.Healthy())
  if (options.keepAlive !== undefined) {
    const keepAlive = options.keepAlive
    const threshold = Math.max(1, keepAlive.failureThreshold ?? 3)
    const pingTimeout = keepAlive.timeout ?? requestTimeout
    let failures = 0
    yield* Effect.sleep(keepAlive.interval).pipe(
      Effect.andThen(transport.request("ping", undefined, { timeout: pingTimeout })),
      Effect.matchEffect({
        onSuccess: () => {
          failures = 0
          return SubscriptionRef.set(health, Health.Healthy())
        },
        onFailure: (error) => {
          failures++
          return failures >= threshold
            ? SubscriptionRef.set(health, Health.Degraded({ consecutiveFailures: failures, lastError: error }))
            : Effect.void
        }
      }),
      Effect.forever,
      Effect.forkScoped({ startImmediately: true })
    )
  }

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
    callToolStream: (params, o) => streamed((so) => callTool(toParams(params), so), o),
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
    request: (method, params, o) => send(method, params, o, undecoded),
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

/** The handshake over the `ClientTransport` in context. */
export const make = (options: McpClientOptions = {}): Effect.Effect<McpClientShape, HandshakeError, ClientTransport | Scope.Scope> =>
  Effect.flatMap(ClientTransport, (transport) => fromTransport(transport, options))

/**
 * Builds the transport and the client in one scope: closing it closes the
 * client and the transport (the process is killed, the session deleted); a
 * failed handshake closes the transport at once.
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

/** The client as a layer over a transport layer: `McpClient.layer(opts).pipe(Layer.provide(transportLayer))`. */
export const layer = (options: McpClientOptions = {}): Layer.Layer<McpClient, HandshakeError, ClientTransport> =>
  Layer.effect(McpClient, make(options))
