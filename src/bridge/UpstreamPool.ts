/**
 * A fixed number of upstream connections to a server of the handshake era
 * (2024-11-05 … 2025-11-25), each initialized once by the bridge and shared
 * by every request routed to it: what puts a legacy server behind a front of
 * the stateless era. A request goes to the connection with the fewest
 * requests in flight; a connection that closed (the process crashed) is
 * replaced when a request next needs one, and closing the pool's scope
 * closes them all.
 *
 * The upstream's traffic that belongs to a request is routed back to it:
 * progress by token (the bridge gives each forwarded request a token of its
 * own, so clients that pick the same token never meet upstream), and log
 * messages and requests to the client (sampling, elicitation, roots) to the
 * one request in flight on that connection. Stdio carries no link between
 * them and their request, so with several requests in flight on one
 * connection they are not guessed: log messages are dropped and asks
 * refused. Every other notification (list changes, resource updates) goes
 * to `onBroadcast`.
 *
 * @since 0.1.0
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as Context from "effect/Context"
import type { ClientTransportShape } from "../client/ClientTransport.ts"
import type { Implementation } from "../Implementation.ts"
import * as JsonRpc from "../JsonRpc.ts"
import { type RequestError, RpcError } from "../McpError.ts"
import * as ProtocolVersion from "../ProtocolVersion.ts"
import { failConnecting, firstLine, UpstreamUnavailable } from "./UpstreamErrors.ts"
import { isRecord } from "../internal/Records.ts"

/**
 * How to open and greet the upstream connections.
 *
 * @since 0.1.0
 * @category models
 */
export interface UpstreamPoolOptions<E, R> {
  /** Opens one upstream connection, in a scope that closes with it. */
  readonly connect: Effect.Effect<ClientTransportShape, E, R>
  /** How many connections (processes, for a stdio server). Default 1: one session shared by every request. */
  readonly size?: number | undefined
  /** Sent in the bridge's `initialize`. Default `{ name: "effect-mcp-transport-bridge", version: "0.1.0" }`. */
  readonly clientInfo?: Implementation | undefined
  /**
   * The client capabilities the bridge declares upstream: what the upstream
   * may ask for; each ask is then checked against the capabilities of the
   * request it belongs to. Default `DEFAULT_UPSTREAM_CAPABILITIES`.
   */
  readonly capabilities?: Readonly<Record<string, unknown>> | undefined
  /** Timeout of each forwarded request. Default: none. */
  readonly requestTimeout?: Duration.Input | undefined
  /** Timeout of the bridge's `initialize`. Default 30 seconds. */
  readonly initializeTimeout?: Duration.Input | undefined
  /** Told every upstream notification tied to no request (list changes, resource updates). */
  readonly onBroadcast?: ((method: string, params: unknown) => Effect.Effect<void>) | undefined
}

/**
 * The client capabilities the bridge declares upstream by default: sampling, form and URL elicitation, roots.
 *
 * @since 0.1.0
 * @category defaults
 */
export const DEFAULT_UPSTREAM_CAPABILITIES: Readonly<Record<string, unknown>> = {
  sampling: {},
  elicitation: { form: {}, url: {} },
  roots: {}
}

/**
 * What the upstream said at `initialize`.
 *
 * @since 0.1.0
 * @category models
 */
export interface UpstreamInit {
  readonly protocolVersion: string
  readonly capabilities: Readonly<Record<string, unknown>>
  readonly serverInfo: Implementation
  readonly instructions?: string | undefined
}

/**
 * The downstream request a forwarded request serves: where its progress, log
 * messages and the upstream's asks go.
 *
 * @since 0.1.0
 * @category models
 */
export interface Downstream {
  /** Progress for the request, with its own token put back. */
  readonly progress: (params: Readonly<Record<string, unknown>>) => Effect.Effect<void>
  /** A `notifications/message` the upstream sent while serving it. */
  readonly log: (params: Readonly<Record<string, unknown>>) => Effect.Effect<void>
  /** A request the upstream sends the client while serving it (sampling, elicitation, roots). */
  readonly ask: (method: string, params: unknown) => Effect.Effect<unknown, RpcError>
}

/**
 * A running pool.
 *
 * @since 0.1.0
 * @category models
 */
export interface UpstreamPool {
  /** The first connection's `initialize` result (every connection runs the same server). */
  readonly init: UpstreamInit
  /** Forwards one request to the least busy connection. */
  readonly forward: (
    method: string,
    params: Readonly<Record<string, unknown>> | undefined,
    downstream: Downstream
  ) => Effect.Effect<unknown, RequestError | UpstreamUnavailable>
  /** Connections open now. */
  readonly live: Effect.Effect<number>
  /** The transport of a connection open now (connecting one if none is). */
  readonly any: Effect.Effect<ClientTransportShape, UpstreamUnavailable>
}

interface Member {
  readonly transport: ClientTransportShape
  readonly scope: Scope.Closeable
  readonly init: UpstreamInit
  readonly running: Set<Downstream>
  /** The bridge's progress token → the request it was given to. */
  readonly progress: Map<string, { readonly downstream: Downstream; readonly token: unknown }>
  closed: boolean
}

type Slot =
  | { readonly _tag: "Empty" }
  | { readonly _tag: "Connecting"; readonly ready: Deferred.Deferred<Member, UpstreamUnavailable> }
  | { readonly _tag: "Ready"; readonly member: Member }

const EMPTY: Slot = { _tag: "Empty" }

const decodeInit = (raw: unknown): UpstreamInit | undefined => {
  if (!isRecord(raw) || typeof raw.protocolVersion !== "string" || !isRecord(raw.serverInfo)) return undefined
  const info = raw.serverInfo
  if (typeof info.name !== "string" || typeof info.version !== "string") return undefined
  return {
    protocolVersion: raw.protocolVersion,
    capabilities: isRecord(raw.capabilities) ? raw.capabilities : {},
    serverInfo: raw.serverInfo as unknown as Implementation,
    ...(typeof raw.instructions === "string" ? { instructions: raw.instructions } : {})
  }
}

/** The one request in flight on a connection, if there is exactly one. */
const sole = (member: Member): Downstream | undefined => {
  if (member.running.size !== 1) return undefined
  for (const d of member.running) return d
  return undefined
}

/** What connecting a slot takes of its pool, which `connectSlot` takes as its first argument. */
interface Pool {
  readonly slots: Array<Slot>
  readonly scope: Scope.Scope
  /** Opens a connection and runs the handshake on it, in `scope`. */
  readonly open: (scope: Scope.Closeable) => Effect.Effect<Member, UpstreamUnavailable>
}

/**
 * Connects slot `index` (once, whoever asks first), in a fiber of the pool's own; one generator function for every
 * request that finds a slot not open (docs/design.md, "Per-request code and the old generation").
 */
const connectSlot = Effect.fnUntraced(function*(
  pool: Pool,
  index: number
): Effect.fn.Return<Deferred.Deferred<Member, UpstreamUnavailable>> {
  const { slots } = pool
  const current = slots[index]!
  if (current._tag === "Connecting") return current.ready
  if (current._tag === "Ready") yield* Scope.close(current.member.scope, Exit.void)
  const ready = yield* Deferred.make<Member, UpstreamUnavailable>()
  slots[index] = { _tag: "Connecting", ready }
  const scope = yield* Scope.fork(pool.scope, "sequential")
  yield* pool.open(scope).pipe(
    Effect.onExit((exit) => {
      if (Exit.isSuccess(exit)) {
        slots[index] = { _tag: "Ready", member: exit.value }
        return Deferred.succeed(ready, exit.value)
      }
      slots[index] = EMPTY
      return failConnecting(ready, scope, exit.cause)
    }),
    Effect.forkIn(pool.scope, { startImmediately: true })
  )
  return ready
})

/**
 * The pool for the life of the scope: opens every connection and runs the
 * handshake on each, all at once, before it returns (failing with
 * `UpstreamUnavailable` if the first one cannot be opened; another that
 * cannot is opened again when a request needs it).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function*<E, R>(
  options: UpstreamPoolOptions<E, R>
): Effect.fn.Return<UpstreamPool, UpstreamUnavailable, Exclude<R, Scope.Scope> | Scope.Scope> {
  const poolScope = yield* Effect.scope
  const services = yield* Effect.context<Exclude<R, Scope.Scope>>()
  const size = Math.max(1, Math.floor(options.size ?? 1))
  const slots: Array<Slot> = Array.from({ length: size }, () => EMPTY)
  // Progress tokens sent upstream: unique across the pool's connections, which is all they must be.
  let tokens = 0
  const requestTimeout = options.requestTimeout ?? Duration.infinity
  const capabilities = options.capabilities ?? DEFAULT_UPSTREAM_CAPABILITIES
  const clientInfo = options.clientInfo ?? { name: "effect-mcp-transport-bridge", version: "0.1.0" }
  let next = 0

  const onRequest = (member: Member) => (request: JsonRpc.JsonRpcRequest): Effect.Effect<unknown, RpcError> => {
    if (request.method === "ping") return Effect.succeed({})
    const downstream = sole(member)
    if (downstream === undefined) {
      return Effect.fail(
        new RpcError({
          code: JsonRpc.ErrorCode.InternalError,
          rpcMessage: member.running.size === 0
            ? `The bridge cannot forward ${request.method}: no client request is in flight on this connection`
            : `The bridge cannot forward ${request.method}: ${member.running.size} client requests are in flight on this connection and nothing says which one asks`
        })
      )
    }
    return downstream.ask(request.method, request.params)
  }

  const onNotification = (member: Member) => (n: JsonRpc.JsonRpcNotification): Effect.Effect<void> => {
    const params = isRecord(n.params) ? n.params : {}
    switch (n.method) {
      case "notifications/cancelled":
        return Effect.void
      case "notifications/progress": {
        const entry = typeof params.progressToken === "string" ? member.progress.get(params.progressToken) : undefined
        return entry === undefined ? Effect.void : entry.downstream.progress({ ...params, progressToken: entry.token })
      }
      case "notifications/message": {
        const downstream = sole(member)
        return downstream === undefined
          ? Effect.logDebug("bridge: dropped an upstream log message: not exactly one request in flight")
          : downstream.log(params)
      }
      default:
        return options.onBroadcast === undefined ? Effect.void : options.onBroadcast(n.method, n.params)
    }
  }

  const open = (scope: Scope.Closeable): Effect.Effect<Member, UpstreamUnavailable> =>
    Effect.gen(function*() {
      const transport = yield* options.connect.pipe(
        Scope.provide(scope),
        Effect.provideContext(services as Context.Context<never>),
        Effect.mapError((cause) => new UpstreamUnavailable({ cause }))
      ) as Effect.Effect<ClientTransportShape, UpstreamUnavailable>
      let member: Member | undefined
      // Nothing is routed until the handshake is done; nothing a request could own comes before it.
      yield* transport.setRequestHandler((request) =>
        member === undefined ? Effect.succeed({}) : onRequest(member)(request)
      )
      yield* transport.notifications.pipe(
        Stream.runForEach((n) => member === undefined ? Effect.void : onNotification(member)(n)),
        Effect.forkIn(scope, { startImmediately: true })
      )
      const raw = yield* transport.request(
        "initialize",
        { protocolVersion: ProtocolVersion.LATEST, capabilities, clientInfo },
        { timeout: options.initializeTimeout ?? Duration.seconds(30) }
      ).pipe(Effect.mapError((cause) => new UpstreamUnavailable({ cause })))
      const init = decodeInit(raw)
      if (init === undefined) {
        return yield* new UpstreamUnavailable({ cause: new Error("the upstream's initialize result is malformed") })
      }
      if (ProtocolVersion.isSupported(init.protocolVersion)) yield* transport.setProtocolVersion(init.protocolVersion)
      yield* Effect.ignore(transport.notify("notifications/initialized"))
      // Every level is asked for: the front passes on what each request asked for.
      if (init.capabilities.logging !== undefined) {
        yield* Effect.ignore(transport.request("logging/setLevel", { level: "debug" }, { timeout: requestTimeout }))
      }
      const m: Member = { transport, scope, init, running: new Set(), progress: new Map(), closed: false }
      member = m
      yield* transport.awaitClosed.pipe(
        Effect.flatMap((error) => {
          m.closed = true
          return Effect.logInfo(`bridge: upstream connection closed: ${firstLine(error.message)}`)
        }),
        Effect.forkIn(scope, { startImmediately: true })
      )
      return m
    })

  const pool: Pool = { slots, scope: poolScope, open }

  /** The least busy open connection; closed ones are reconnected on the way. */
  const acquire: Effect.Effect<Member, UpstreamUnavailable> = Effect.gen(function*() {
    let best: Member | undefined
    const waiting: Array<Deferred.Deferred<Member, UpstreamUnavailable>> = []
    // Starting at a rotating index spreads requests over idle connections alike.
    const start = next++ % size
    for (let k = 0; k < size; k++) {
      const index = (start + k) % size
      const slot = slots[index]!
      if (slot._tag === "Ready" && !slot.member.closed) {
        if (best === undefined || slot.member.running.size < best.running.size) best = slot.member
      } else {
        waiting.push(yield* connectSlot(pool, index))
      }
    }
    if (best !== undefined) return best
    return yield* Effect.raceAll(waiting.map(Deferred.await))
  })

  const forward: UpstreamPool["forward"] = (method, params, downstream) =>
    Effect.flatMap(acquire, (member) =>
      Effect.suspend(() => {
        const meta = isRecord(params?._meta) ? params._meta : undefined
        let body = params
        let token: string | undefined
        if (meta !== undefined && meta.progressToken !== undefined) {
          token = `bridge-${++tokens}`
          member.progress.set(token, { downstream, token: meta.progressToken })
          body = { ...params, _meta: { ...meta, progressToken: token } }
        }
        member.running.add(downstream)
        return member.transport.request(method, body, { timeout: requestTimeout }).pipe(
          // Progress routing runs in its own fiber: let it pass on what came before the result.
          token === undefined ? (x) => x : Effect.tap(() => Effect.yieldNow),
          Effect.ensuring(Effect.sync(() => {
            member.running.delete(downstream)
            if (token !== undefined) member.progress.delete(token)
          }))
        )
      }))

  // The first connection's answer describes the server; the others open alongside.
  const opening = yield* Effect.forEach(slots, (_, index) => connectSlot(pool, index))
  const first = yield* Deferred.await(opening[0]!)
  // The others too (a failure there is retried when a request needs the connection).
  yield* Effect.forEach(opening.slice(1), (ready) => Effect.exit(Deferred.await(ready)), { discard: true })

  return {
    init: first.init,
    forward,
    live: Effect.sync(() => slots.filter((s) => s._tag === "Ready" && !s.member.closed).length),
    any: Effect.map(acquire, (m) => m.transport)
  }
})
