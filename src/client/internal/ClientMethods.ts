/**
 * `McpClient`'s typed methods, built once the session is set up: each
 * method's capability check (done once, the capabilities being fixed by the
 * handshake or the discovery), its result decoder, and the call engine that
 * sends it, recorded in the metrics where they are on. In the stateless era
 * the methods that era removed are done its way (liveness is a discovery,
 * the log level travels with each request, resource subscriptions are the
 * listen stream's filter), list pages are cached for the `ttlMs` the server
 * allows, and over HTTP a tool's `x-mcp-header` parameters are remembered
 * for its calls' headers.
 *
 * Every failure leaves here in its group (`McpErrorGroup.group`).
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type * as Duration from "effect/Duration"
import type * as Scope from "effect/Scope"
import type * as SubscriptionRef from "effect/SubscriptionRef"
import * as SubscriptionRefMake from "effect/SubscriptionRef"
import type * as McpSchema from "effect/ai/McpSchema"
import type * as Schema from "effect/Schema"
import type { Implementation } from "../../Implementation.ts"
import { CapabilityNotSupported, type NotifyError, type RequestError } from "../../McpError.ts"
import { group, type Grouped } from "../../McpErrorGroup.ts"
import * as RequestMeta from "../../RequestMeta.ts"
import * as Metrics from "../../observability/Metrics.ts"
import type { ClientTransportShape } from "../ClientTransport.ts"
import type { McpClientOptions } from "./ClientOptions.ts"
import type {
  CallToolOptions,
  CallToolParams,
  CompleteParams,
  DiscoverResult,
  GetPromptParams,
  McpClientShape
} from "./ClientShape.ts"
import type { Established } from "./Handshake.ts"
import * as KeepAlive from "./KeepAlive.ts"
import * as Listen from "./Listen.ts"
import * as McpCallEngine from "./McpCallEngine.ts"
import type { CallOptions, FlatError } from "./McpCallEngine.ts"
import * as ModernCalls from "./ModernCalls.ts"
import type { NotificationHub } from "./NotificationHub.ts"
import * as ResultCache from "./ResultCache.ts"
import * as ServerRequests from "./ServerRequests.ts"
import * as TaskCalls from "./TaskCalls.ts"
import * as TaskResults from "./TaskResults.ts"

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

/** Puts a method's failures in their groups: the one place where the client's flat errors become public. */
const grouped = <Args extends ReadonlyArray<any>, X, E, R>(f: (...args: Args) => Effect.Effect<X, E, R>) =>
(...args: Args): Effect.Effect<X, Grouped<E>, R> => Effect.mapError(f(...args), group)

const groupedStream = <Args extends ReadonlyArray<any>, X, E, R>(f: (...args: Args) => Stream.Stream<X, E, R>) =>
(...args: Args): Stream.Stream<X, Grouped<E>, R> => Stream.mapError(f(...args), group)

/** What the methods are built over: the transport, the calls, the notifications and the session set up. */
export interface Session {
  readonly transport: ClientTransportShape
  readonly options: McpClientOptions
  readonly requestTimeout: Duration.Duration
  readonly calls: McpCallEngine.CallEngine
  readonly hub: NotificationHub
  readonly established: Established
  readonly capabilities: Record<string, unknown>
  readonly clientInfo: Implementation
}

/** The client: its methods over `session`, with the keep-alive and (stateless era) the listen stream started. */
export const make = Effect.fnUntraced(function*(
  { calls, capabilities, clientInfo, established, hub, options, requestTimeout, transport }: Session
): Effect.fn.Return<McpClientShape, never, Scope.Scope> {
  const { discovered, era, init, schemas, version } = established
  const overHttp = transport.kind === "streamable-http"
  const serverCapabilities = init.capabilities
  const discoverResult = era === "modern" ? discovered as DiscoverResult : undefined

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
  hub.dropCachedWith((method) => cache.invalidate(`${method} `))
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
    hub.admitWith(l.admit)
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
    ...hub.views
  }
})

// Loaded on the first call that asks for it: a client that never decodes failures does not load the codec.
const decodingFailure = <F extends Schema.Top, E, R>(
  failure: F,
  call: Effect.Effect<McpSchema.CallToolResult, E, R>
): Effect.Effect<McpSchema.CallToolResult, E | F["Type"], R | F["DecodingServices"]> =>
  Effect.flatMap(Effect.promise(() => import("../ToolFailure.ts")), (ToolFailure) => ToolFailure.decode(failure)(call))
