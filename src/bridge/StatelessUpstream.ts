/**
 * Requests of the stateless era (2026-07-28) forwarded as they are to one
 * upstream connection that speaks that era, shared by every client of the
 * era: the era keeps no state between requests, so one connection (one
 * process, for a stdio server) serves them all.
 *
 * The connection is opened when a request first needs it and is probed with
 * `server/discover` (`Negotiation.classify` reads the answer): an upstream
 * that speaks the stateless era keeps the connection; one that does not
 * closes it, and the verdict `legacy` holds for the life of the bridge. A
 * connection that closes (the process crashed) fails its requests in flight
 * with -32000 and is opened (and probed) again by the next request.
 *
 * The upstream's traffic that belongs to a request is routed back to it:
 * progress by token (each forwarded request gets a token of the bridge's, so
 * clients that pick the same token never meet upstream), the messages of a
 * `subscriptions/listen` by subscription id (the upstream names the
 * bridge's request id; the client gets its own), and log messages to the one
 * request in flight (stdio carries no link between a log message and its
 * request: with several in flight, whose it is is not guessed and it is
 * dropped, since the requests may be different clients').
 *
 * Over HTTP a `tools/call` carries the `Mcp-Param-*` headers its tool's
 * `x-mcp-header` parameters call for: the bridge learns them from the
 * `tools/list` results that pass, and lists the tools itself for a tool it
 * has not seen.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { ClientTransportShape } from "../client/ClientTransport.ts"
import * as Negotiation from "../client/Negotiation.ts"
import type { Implementation } from "../Implementation.ts"
import * as JsonRpc from "../JsonRpc.ts"
import { type RequestError, RpcError } from "../McpError.ts"
import * as ProtocolVersion from "../ProtocolVersion.ts"
import * as RequestMeta from "../RequestMeta.ts"
import type { HandlerContext } from "../server/Handler.ts"
import { failConnecting, firstLine, toRpcError, UpstreamUnavailable } from "./UpstreamErrors.ts"
import { isRecord } from "../internal/Records.ts"

/**
 * How to open and probe the connection.
 *
 * @since 0.1.0
 * @category models
 */
export interface StatelessUpstreamOptions {
  /** Opens the connection, in a scope that closes with it. */
  readonly connect: Effect.Effect<ClientTransportShape, unknown, Scope.Scope>
  /** Timeout of each forwarded request. Default: none. */
  readonly requestTimeout?: Duration.Input | undefined
  /**
   * Timeout of the probe. Default 30 seconds: a stdio server silent that
   * long is taken for one of the handshake era, for the life of the bridge,
   * so the time a slow server takes to start must fit in it.
   */
  readonly probeTimeout?: Duration.Input | undefined
  /** Sent in the probe's `_meta`. Default `{ name: "effect-mcp-transport-bridge", version: "0.2.0" }`. */
  readonly clientInfo?: Implementation | undefined
}

/**
 * What the upstream speaks: the stateless era, or only the handshake (with the probe's reason).
 *
 * @since 0.1.0
 * @category models
 */
export type UpstreamEra = { readonly _tag: "Modern" } | Legacy

interface Legacy {
  readonly _tag: "Legacy"
  readonly reason: string
}

/**
 * A running forwarder.
 *
 * @since 0.1.0
 * @category models
 */
export interface StatelessUpstream {
  /** What the upstream speaks, probing it (on a connection kept for the requests) if not known yet. */
  readonly era: Effect.Effect<UpstreamEra, UpstreamUnavailable>
  /** Forwards one request of the stateless era on behalf of `ctx` (the upstream must speak the era). */
  readonly forward: (request: JsonRpc.JsonRpcRequest, ctx: HandlerContext) => Effect.Effect<JsonRpc.JsonRpcResponse>
  /** Connections open now: 0 or 1. */
  readonly live: Effect.Effect<number>
  /**
   * Closes the connection when no request is in flight on it, after a probe
   * under way has settled; a `legacy` verdict stays. The next request opens
   * (and probes) a connection again.
   */
  readonly release: Effect.Effect<void>
}

interface Connection {
  readonly transport: ClientTransportShape
  readonly scope: Scope.Closeable
  /** Requests in flight. */
  readonly running: Set<HandlerContext>
  /** The bridge's progress token → the request and the token it gave. */
  readonly progress: Map<string, { readonly ctx: HandlerContext; readonly token: string | number }>
  /** The bridge's request id of a `subscriptions/listen` → the request. */
  readonly listens: Map<string, HandlerContext>
  /** HTTP only: tool name → the parameters it mirrors into `Mcp-Param-*` headers. */
  readonly headerParams: Map<string, ReadonlyArray<RequestMeta.HeaderParam>> | undefined
  closed: boolean
}

type State =
  | { readonly _tag: "Empty" }
  | { readonly _tag: "Connecting"; readonly ready: Deferred.Deferred<Connection | Legacy, UpstreamUnavailable> }
  | { readonly _tag: "Ready"; readonly connection: Connection }
  | { readonly _tag: "Legacy"; readonly era: Legacy }

const MODERN: UpstreamEra = { _tag: "Modern" }

const metaOf = (params: unknown): Record<string, unknown> | undefined =>
  isRecord(params) && isRecord(params._meta) ? params._meta : undefined

const keyOf = (id: unknown): string => `${typeof id}:${String(id)}`

/** Records the `Mcp-Param-*` parameters of the tools in a `tools/list` result (HTTP only). */
const learnTools = (c: Connection, result: unknown): void => {
  if (c.headerParams === undefined || !isRecord(result) || !Array.isArray(result.tools)) return
  for (const tool of result.tools) {
    if (!isRecord(tool) || typeof tool.name !== "string") continue
    const found = RequestMeta.headerParams(tool.inputSchema)
    c.headerParams.set(tool.name, found._tag === "Valid" ? found.params : [])
  }
}

/**
 * The `Mcp-Param-*` headers of a `tools/call` (listing the tools, with the caller's `_meta`, for one not seen yet);
 * one generator function for every forwarded request (docs/design.md, "Per-request code and the old generation").
 */
const paramHeadersOf = Effect.fnUntraced(function*(
  c: Connection,
  request: JsonRpc.JsonRpcRequest,
  requestTimeout: Duration.Input
): Effect.fn.Return<Record<string, string> | undefined, RequestError> {
  const known = c.headerParams
  const params = isRecord(request.params) ? request.params : {}
  if (known === undefined || request.method !== "tools/call" || typeof params.name !== "string") return undefined
  if (!known.has(params.name)) {
    const meta = metaOf(params) ?? {}
    let cursor: unknown = undefined
    for (let page = 0; page < 100; page++) {
      const listed = yield* c.transport.request(
        "tools/list",
        { ...(typeof cursor === "string" ? { cursor } : {}), _meta: meta },
        { timeout: requestTimeout }
      )
      learnTools(c, listed)
      cursor = isRecord(listed) ? listed.nextCursor : undefined
      if (typeof cursor !== "string") break
    }
  }
  const found = known.get(params.name)
  return found === undefined || found.length === 0 ? undefined : RequestMeta.paramHeaders(found, params.arguments)
})

/**
 * The forwarder for the life of the scope; closing it closes the connection.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function*(
  options: StatelessUpstreamOptions
): Effect.fn.Return<StatelessUpstream, never, Scope.Scope> {
  const ownScope = yield* Effect.scope
  const requestTimeout = options.requestTimeout ?? Duration.infinity
  const clientInfo = options.clientInfo ?? { name: "effect-mcp-transport-bridge", version: "0.2.0" }
  let state: State = { _tag: "Empty" }
  // Progress tokens sent upstream: unique across this forwarder's connections, which is all they must be.
  let tokens = 0

  const sole = (c: Connection): HandlerContext | undefined => {
    if (c.running.size !== 1) return undefined
    for (const ctx of c.running) return ctx
    return undefined
  }

  const route = (c: Connection) => (n: JsonRpc.JsonRpcNotification): Effect.Effect<void> => {
    const params = isRecord(n.params) ? n.params : {}
    if (n.method === "notifications/cancelled") return Effect.void
    if (n.method === "notifications/progress") {
      const entry = typeof params.progressToken === "string" ? c.progress.get(params.progressToken) : undefined
      return entry === undefined
        ? Effect.void
        : Effect.ignore(entry.ctx.notify(n.method, { ...params, progressToken: entry.token }))
    }
    const meta = metaOf(params)
    const subscription = meta?.[RequestMeta.MetaKey.subscriptionId]
    if (subscription !== undefined) {
      const ctx = c.listens.get(keyOf(subscription))
      if (ctx === undefined || ctx.requestId === undefined) return Effect.void
      return Effect.ignore(ctx.notify(n.method, {
        ...params,
        _meta: { ...meta, [RequestMeta.MetaKey.subscriptionId]: ctx.requestId }
      }))
    }
    if (n.method === "notifications/message") {
      const ctx = sole(c)
      return ctx === undefined
        ? Effect.logDebug("bridge: dropped an upstream log message: not exactly one request in flight")
        : Effect.ignore(ctx.notify(n.method, n.params))
    }
    return Effect.logDebug(`bridge: dropped ${n.method} from the upstream: no request it belongs to`)
  }

  /** Opens and probes a connection: kept when the upstream speaks the era, closed when not. */
  const open = (scope: Scope.Closeable): Effect.Effect<Connection | Legacy, UpstreamUnavailable> =>
    Effect.gen(function*() {
      const transport = yield* options.connect.pipe(
        Scope.provide(scope),
        Effect.mapError((cause) => new UpstreamUnavailable({ cause }))
      )
      const c: Connection = {
        transport,
        scope,
        running: new Set(),
        progress: new Map(),
        listens: new Map(),
        headerParams: transport.kind === "streamable-http" ? new Map() : undefined,
        closed: false
      }
      // The era has no requests from the server; an upstream that sends one anyway is told so.
      yield* transport.setRequestHandler((request) =>
        request.method === "ping"
          ? Effect.succeed({})
          : Effect.fail(
            new RpcError({
              code: JsonRpc.ErrorCode.MethodNotFound,
              rpcMessage: `The bridge does not forward ${request.method} in protocol revision 2026-07-28`
            })
          )
      )
      yield* transport.notifications.pipe(Stream.runForEach(route(c)), Effect.forkIn(scope, { startImmediately: true }))
      const requested = ProtocolVersion.LATEST_STATELESS
      yield* transport.setProtocolVersion(requested)
      const exit = yield* Effect.exit(transport.request(
        "server/discover",
        { _meta: RequestMeta.requestMeta({ protocolVersion: requested, clientCapabilities: {}, clientInfo }) },
        { timeout: options.probeTimeout ?? Duration.seconds(30) }
      ))
      // An interrupted probe says nothing about the upstream: no verdict, for the life of the bridge or otherwise.
      if (Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)) return yield* Effect.interrupt
      const verdict = Negotiation.classify({
        transport: transport.kind === "streamable-http" ? "http" : "stdio",
        requested,
        outcome: Negotiation.outcomeOf(exit)
      })
      switch (verdict._tag) {
        case "Modern":
        case "RetryModern":
          break
        case "Legacy":
          return { _tag: "Legacy", reason: verdict.reason } satisfies Legacy
        case "Fail":
          return yield* new UpstreamUnavailable({
            cause: Exit.isFailure(exit) ? Cause.squash(exit.cause) : new Error(verdict.reason)
          })
      }
      // Runs before the transport's own release (finalizers run last-added first): a close the bridge
      // asked for is not news, one the upstream made is.
      let closing = false
      yield* Scope.addFinalizer(scope, Effect.sync(() => void (closing = true)))
      yield* transport.awaitClosed.pipe(
        Effect.flatMap((error) => {
          c.closed = true
          // "transport scope closed" is the transport's own word for a close its scope made, never the upstream's.
          return closing || error.reason === "transport scope closed"
            ? Effect.void
            : Effect.logInfo(`bridge: upstream connection (2026-07-28) closed: ${firstLine(error.message)}`)
        }),
        Effect.forkIn(scope, { startImmediately: true })
      )
      return c
    })

  /** The open connection or the verdict, connecting (once, whoever asks first) in a fiber of the forwarder's own. */
  const acquire: Effect.Effect<Connection | Legacy, UpstreamUnavailable> = Effect.suspend(() => {
    const current = state
    switch (current._tag) {
      case "Legacy":
        return Effect.succeed(current.era)
      case "Connecting":
        return Deferred.await(current.ready)
      case "Ready":
        if (!current.connection.closed) return Effect.succeed(current.connection)
    }
    // Uninterruptible until the probe is forked: a cancel in between would leave `Connecting` never settled.
    return Effect.uninterruptibleMask((restore) => Effect.gen(function*() {
      if (current._tag === "Ready") yield* Scope.close(current.connection.scope, Exit.void)
      const ready = yield* Deferred.make<Connection | Legacy, UpstreamUnavailable>()
      state = { _tag: "Connecting", ready }
      const scope = yield* Scope.fork(ownScope, "sequential")
      yield* open(scope).pipe(
        Effect.onExit((exit) => {
          if (Exit.isSuccess(exit)) {
            const value = exit.value
            if ("transport" in value) {
              state = { _tag: "Ready", connection: value }
              return Deferred.succeed(ready, value)
            }
            state = { _tag: "Legacy", era: value }
            return Effect.logInfo(`bridge: the upstream does not speak 2026-07-28 (${value.reason})`).pipe(
              Effect.andThen(Scope.close(scope, Exit.void)),
              Effect.andThen(Deferred.succeed(ready, value))
            )
          }
          state = { _tag: "Empty" }
          return failConnecting(ready, scope, exit.cause)
        }),
        Effect.forkIn(ownScope, { startImmediately: true })
      )
      return yield* restore(Deferred.await(ready))
    }))
  })

  const release: Effect.Effect<void> = Effect.suspend(() => {
    const current = state
    switch (current._tag) {
      case "Connecting":
        return Effect.andThen(Effect.exit(Deferred.await(current.ready)), release)
      case "Ready":
        if (current.connection.running.size > 0) return Effect.void
        state = { _tag: "Empty" }
        return Scope.close(current.connection.scope, Exit.void)
      default:
        return Effect.void
    }
  })

  const send = (c: Connection, request: JsonRpc.JsonRpcRequest, ctx: HandlerContext) =>
    Effect.suspend(() => {
      const meta = metaOf(request.params)
      const clientToken = meta?.progressToken
      let params = request.params
      let token: string | undefined
      if (typeof clientToken === "string" || typeof clientToken === "number") {
        token = `bridge-${++tokens}`
        c.progress.set(token, { ctx, token: clientToken })
        params = { ...(request.params as Record<string, unknown>), _meta: { ...meta, progressToken: token } }
      }
      let listen: string | undefined
      c.running.add(ctx)
      return paramHeadersOf(c, request, requestTimeout).pipe(
        Effect.flatMap((headers) =>
          c.transport.request(request.method, params, {
            timeout: requestTimeout,
            headers,
            onId: request.method === "subscriptions/listen"
              ? (id) => {
                listen = keyOf(id)
                c.listens.set(listen, ctx)
              }
              : undefined
          })
        ),
        Effect.tap((result) => request.method === "tools/list" ? Effect.sync(() => learnTools(c, result)) : Effect.void),
        // Notifications are routed in their own fiber: let them pass on what came before the result.
        Effect.tap(() => Effect.yieldNow),
        Effect.ensuring(Effect.sync(() => {
          c.running.delete(ctx)
          if (token !== undefined) c.progress.delete(token)
          if (listen !== undefined) c.listens.delete(listen)
        }))
      )
    })

  const forward: StatelessUpstream["forward"] = (request, ctx) =>
    acquire.pipe(
      Effect.flatMap((c) =>
        "transport" in c
          ? send(c, request, ctx)
          : Effect.fail(
            new RpcError({
              code: JsonRpc.ErrorCode.UnsupportedProtocolVersion,
              rpcMessage: `Unsupported protocol version: the upstream server does not speak 2026-07-28 (${c.reason})`,
              data: {
                supported: [...ProtocolVersion.SUPPORTED],
                requested: metaOf(request.params)?.[RequestMeta.MetaKey.protocolVersion] ?? ProtocolVersion.LATEST_STATELESS
              }
            })
          )
      ),
      Effect.match({
        onSuccess: (result) => JsonRpc.success(request.id, result),
        onFailure: (error) => {
          const rpc = toRpcError(error)
          return JsonRpc.failure(request.id, rpc.code, rpc.rpcMessage, rpc.data)
        }
      })
    )

  return {
    era: Effect.map(acquire, (c) => "transport" in c ? MODERN : c),
    forward,
    live: Effect.sync(() => state._tag === "Ready" && !state.connection.closed ? 1 : 0),
    release
  }
})
