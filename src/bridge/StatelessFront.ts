/**
 * A server of the handshake era behind a front of the stateless era
 * (2026-07-28): `McpServer` with `stateless: true` does the front's work
 * (per-request `_meta`, `server/discover`, `resultType`, cache hints, log
 * messages only when a request asks, `subscriptions/listen`,
 * `input_required` rounds with a signed `requestState`), and each method it
 * serves forwards to an `UpstreamPool` of initialized upstream connections.
 * Clients of the handshake era are served by the same front (its sessions,
 * its `initialize`).
 *
 * What the front says about itself is the upstream's `initialize` result:
 * its `serverInfo`, `instructions` and capabilities (less
 * `resources.subscribe`, which a shared upstream session cannot honour per
 * client; `logging` always). The methods forwarded are those of the server
 * features the upstream declares (tools, resources, prompts, completions).
 *
 * An ask of the upstream (sampling, elicitation, roots) while it serves a
 * request of the stateless era becomes an `input_required` result: the
 * forwarded request is cancelled upstream, and the client's retry forwards
 * it again, this time answering the ask with the client's answer (the
 * upstream runs the request from the start: see docs/bridge.md). An ask the
 * request's declared capabilities do not cover fails the request with
 * -32021; an ask while serving a method that cannot answer `input_required`
 * fails it with -32603 naming the ask.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Scope from "effect/Scope"
import * as JsonRpc from "../JsonRpc.ts"
import { CapabilityNotSupported, RpcError } from "../McpError.ts"
import * as McpServer from "../server/McpServer.ts"
import type { RequestContext } from "../server/McpServer.ts"
import { firstLine, toRpcError } from "./UpstreamErrors.ts"
import type * as UpstreamPool from "./UpstreamPool.ts"
import { isRecord } from "../internal/Records.ts"

/**
 * The front's own settings (the stateless era's server options).
 *
 * @since 0.1.0
 * @category models
 */
export interface StatelessFrontOptions {
  /**
   * Signs the `requestState` of `input_required` results. Default: a random
   * key per process; several bridge processes behind one endpoint need a
   * shared one. At least 32 bytes. See `McpServerOptions.requestStateKey`.
   */
  readonly requestStateKey?: string | Uint8Array | undefined
  /** Signing keys for rotation, current first (see `McpServerOptions.requestStateKeys`). */
  readonly requestStateKeys?: ReadonlyArray<string | Uint8Array> | undefined
  /** How long a `requestState` may be brought back. Default 10 minutes. */
  readonly requestStateTtl?: Duration.Input | undefined
  /** Cache hints of `server/discover`. Default `{ ttlMs: 60000, cacheScope: "private" }`. */
  readonly discovery?: McpServer.McpServerOptions["discovery"]
  /** Cache hints of list results and `resources/read`. Default `{ ttlMs: 0, cacheScope: "private" }`. */
  readonly resultCache?: McpServer.McpServerOptions["resultCache"]
}

/** The methods of each server feature a front forwards. */
const FEATURE_METHODS: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
  ["tools", ["tools/list", "tools/call"]],
  ["resources", ["resources/list", "resources/templates/list", "resources/read"]],
  ["prompts", ["prompts/list", "prompts/get"]],
  ["completions", ["completion/complete"]]
]

/**
 * The methods a front forwards to an upstream that declares `capabilities`.
 *
 * @since 0.1.0
 * @category utils
 */
export const forwardedMethods = (capabilities: Readonly<Record<string, unknown>>): ReadonlyArray<string> =>
  FEATURE_METHODS.flatMap(([feature, methods]) => capabilities[feature] === undefined ? [] : methods)

/**
 * The capabilities a front declares for an upstream's: the same, less
 * `resources.subscribe` (subscriptions are per client; the upstream session
 * is shared).
 *
 * @since 0.1.0
 * @category utils
 */
export const frontCapabilities = (upstream: Readonly<Record<string, unknown>>): Record<string, unknown> => {
  const out: Record<string, unknown> = { ...upstream }
  if (isRecord(out.resources) && "subscribe" in out.resources) {
    const { subscribe: _, ...rest } = out.resources
    out.resources = rest
  }
  return out
}

/**
 * The capability path an ask of the client needs (`undefined`: none known).
 *
 * @since 0.1.0
 * @category utils
 */
export const askCapability = (method: string, params: unknown): ReadonlyArray<string> | undefined => {
  switch (method) {
    case "sampling/createMessage":
      return ["sampling"]
    case "elicitation/create":
      return isRecord(params) && params.mode === "url" ? ["elicitation", "url"] : ["elicitation"]
    case "roots/list":
      return ["roots"]
    default:
      return undefined
  }
}

/**
 * Whether declared client capabilities cover a path.
 *
 * @since 0.1.0
 * @category utils
 */
export const declares = (capabilities: Readonly<Record<string, unknown>>, path: ReadonlyArray<string>): boolean => {
  let node: unknown = capabilities
  for (const key of path) {
    if (!isRecord(node) || node[key] === undefined) return false
    node = node[key]
  }
  return true
}

/**
 * Params as the upstream gets them: without the stateless era's `_meta`
 * keys (`io.modelcontextprotocol/…`), which a server of the handshake era
 * does not know.
 *
 * @since 0.1.0
 * @category utils
 */
export const withoutEraMeta = (params: unknown): Record<string, unknown> | undefined => {
  if (!isRecord(params)) return undefined
  if (!isRecord(params._meta)) return params
  const meta: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(params._meta)) {
    if (!key.startsWith("io.modelcontextprotocol/")) meta[key] = value
  }
  const { _meta: _, ...rest } = params
  return Object.keys(meta).length === 0 ? rest : { ...rest, _meta: meta }
}

const MULTI_ROUND: ReadonlySet<string> = new Set(["tools/call", "resources/read", "prompts/get"])

const askFailed = (method: string, reason: string) =>
  new RpcError({ code: JsonRpc.ErrorCode.InternalError, rpcMessage: `The client cannot answer ${method}: ${reason}` })

/** The request an ask of the upstream comes in: what `askClient` takes as its first argument. */
interface Asked {
  readonly ctx: RequestContext
  /** The forwarded request's method. */
  readonly method: string
  readonly modern: boolean
  /** Completed by an ask that ends this run: interrupted for an input round, failed otherwise. */
  readonly stop: Deferred.Deferred<never, unknown>
}

// One generator function for every request, and one for every ask (docs/design.md, "Per-request code and the old generation").

/** Asks the client what the upstream asked while serving `asked`, as the request's era allows. */
const askClient = Effect.fnUntraced(function*(
  asked: Asked,
  askMethod: string,
  askParams: unknown
): Effect.fn.Return<unknown, RpcError> {
  const { ctx, method, modern, stop } = asked
  const capability = askCapability(askMethod, askParams)
  if (capability !== undefined && !declares(ctx.session.clientCapabilities, capability)) {
    const missing = new CapabilityNotSupported({ method: askMethod, capability: capability.join("."), peer: "client" })
    // Stateless era: the client learns which capability to declare (-32021). Handshake era: the upstream decides.
    if (modern) yield* Deferred.fail(stop, missing)
    return yield* askFailed(askMethod, `it did not declare ${missing.capability}`)
  }
  if (modern && !MULTI_ROUND.has(method)) {
    const error = askFailed(askMethod, `${method} cannot answer input_required in the stateless era`)
    yield* Deferred.fail(stop, error)
    return yield* error
  }
  const exit = yield* Effect.exit(ctx.request(askMethod, askParams))
  if (Exit.isSuccess(exit)) return exit.value
  if (Cause.hasInterruptsOnly(exit.cause)) {
    // An input round: the ask is recorded; ending this run answers input_required.
    yield* Deferred.failCause(stop, exit.cause as Cause.Cause<never>)
    return yield* askFailed(askMethod, "the client is asked in an input_required round")
  }
  const error = Cause.squash(exit.cause)
  return yield* (error instanceof RpcError
    ? error
    : askFailed(askMethod, firstLine(error instanceof Error ? error.message : String(error))))
})

/**
 * Forwards one request to the pool on behalf of `ctx`, turning the
 * upstream's asks into what the request's era allows.
 */
const forward = Effect.fnUntraced(function*(
  pool: UpstreamPool.UpstreamPool,
  method: string,
  params: unknown,
  ctx: RequestContext
): Effect.fn.Return<unknown, unknown> {
  const stop = yield* Deferred.make<never, unknown>()
  const asked: Asked = { ctx, method, modern: ctx.session.era === "modern", stop }
  const downstream: UpstreamPool.Downstream = {
    progress: (p) =>
      typeof p.progress === "number"
        ? ctx.progress(p.progress, {
          total: typeof p.total === "number" ? p.total : undefined,
          message: typeof p.message === "string" ? p.message : undefined
        })
        : Effect.void,
    log: (p) =>
      typeof p.level === "string"
        ? ctx.log(p.level as Parameters<RequestContext["log"]>[0], p.data, typeof p.logger === "string" ? p.logger : undefined)
        : Effect.void,
    ask: (askMethod, askParams) => askClient(asked, askMethod, askParams)
  }
  return yield* pool.forward(method, withoutEraMeta(params), downstream).pipe(
    Effect.mapError(toRpcError),
    Effect.raceFirst(Deferred.await(stop))
  )
})

/** The handler of `method`: forwards each request to the pool. */
const forwardFor = (pool: UpstreamPool.UpstreamPool, method: string) =>
(params: unknown, ctx: RequestContext): Effect.Effect<unknown, unknown> => forward(pool, method, params, ctx)

/**
 * The front's `McpServer` handle over a pool: build it once the pool is
 * open (it describes itself with the pool's `initialize` result), mount
 * `handler` (it drops ended sessions itself).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  pool: UpstreamPool.UpstreamPool,
  options: StatelessFrontOptions = {}
): Effect.Effect<McpServer.ServerHandle<never>, never, Scope.Scope> => {
  const init = pool.init
  let server = McpServer.make({
    serverInfo: init.serverInfo,
    instructions: init.instructions,
    capabilities: frontCapabilities(init.capabilities),
    stateless: true,
    requestStateKey: options.requestStateKey,
    requestStateKeys: options.requestStateKeys,
    requestStateTtl: options.requestStateTtl,
    discovery: options.discovery,
    resultCache: options.resultCache
  })
  for (const method of forwardedMethods(init.capabilities)) {
    server = server.pipe(McpServer.method(method, {}, forwardFor(pool, method)))
  }
  return McpServer.toHandler(server)
}
