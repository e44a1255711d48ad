/**
 * A server of the stateless era (2026-07-28) behind a front of the
 * handshake era: `McpServer` (handshake only) answers `initialize` with what
 * the upstream's `server/discover` said, keeps the sessions, and forwards
 * each method to one `McpClient` that speaks the upstream's era (it
 * negotiates; pinned to 2026-07-28 it never tries the handshake).
 *
 * The client is shared by every session: the upstream is stateless, so a
 * session is only the front's. What crosses, and how:
 * - requests: the front session's params go as they are (the client adds the
 *   stateless era's `_meta`); results lose the stateless era's own fields
 *   (`resultType`, `ttlMs`, `cacheScope`, the server's identity in `_meta`);
 * - `input_required`: the client answers each input request by asking the
 *   downstream session (a real request to the client over its session),
 *   then retries upstream; an ask the session did not declare the
 *   capability for fails the request with -32021;
 * - progress: to the request that carries the token; log messages: the
 *   client asks for every level, and the front passes on what each
 *   session's `logging/setLevel` admits, to the one request in flight (none
 *   or several in flight: dropped, nothing says which one they belong to);
 * - list changes (the client holds a `subscriptions/listen`): to every
 *   initialized session.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { ClientTransportShape } from "../client/ClientTransport.ts"
import * as McpClient from "../client/McpClient.ts"
import type { Implementation } from "../Implementation.ts"
import * as JsonRpc from "../JsonRpc.ts"
import { RpcError } from "../McpError.ts"
import type * as ProtocolVersion from "../ProtocolVersion.ts"
import * as RequestMeta from "../RequestMeta.ts"
import * as McpServer from "../server/McpServer.ts"
import type { RequestContext } from "../server/McpServer.ts"
import { askCapability, declares, forwardedMethods, frontCapabilities } from "./StatelessFront.ts"
import { firstLine, toRpcError } from "./UpstreamErrors.ts"
import { isRecord } from "../internal/Records.ts"

/**
 * How the front's upstream client speaks.
 *
 * @since 0.1.0
 * @category models
 */
export interface HandshakeFrontOptions {
  /** The upstream client's era: `"auto"` (default) negotiates, `"2026-07-28"` pins the stateless era. */
  readonly protocol?: "auto" | ProtocolVersion.AnyVersion | undefined
  /** The upstream client's `clientInfo`. Default `{ name: "effect-mcp-transport-bridge", version: "0.1.0" }`. */
  readonly clientInfo?: Implementation | undefined
  /** Timeout of each forwarded request (idle, restarted by progress). Default: none. */
  readonly requestTimeout?: Duration.Input | undefined
}

/**
 * A running front.
 *
 * @since 0.1.0
 * @category models
 */
export interface HandshakeFront {
  readonly handle: McpServer.ServerHandle<never>
  readonly client: McpClient.McpClientShape
}

/** Who the upstream's input requests of the call being served go to. */
class CurrentRequest extends Context.Reference<RequestContext | undefined>(
  "effect-mcp-transport/bridge/HandshakeFront/CurrentRequest",
  { defaultValue: () => undefined }
) {}

const refused = (method: string, reason: string) =>
  new RpcError({ code: JsonRpc.ErrorCode.InternalError, rpcMessage: `The client cannot answer ${method}: ${reason}` })

/** The result as a client of the handshake era expects it. */
const legacyResult = (result: unknown): unknown => {
  if (!isRecord(result)) return result
  const { cacheScope: _c, resultType: _r, ttlMs: _t, ...rest } = result
  if (!isRecord(rest._meta) || !(RequestMeta.MetaKey.serverInfo in rest._meta)) return rest
  const { [RequestMeta.MetaKey.serverInfo]: _s, ...meta } = rest._meta
  const { _meta: _m, ...bare } = rest
  return Object.keys(meta).length === 0 ? bare : { ...bare, _meta: meta }
}

/** How a failed upstream call is answered to the session. */
const upstreamError = (grouped: McpClient.McpClientError): RpcError => {
  const error = grouped.reason
  switch (error._tag) {
    case "RpcError":
      return error
    case "MissingClientCapability":
      return new RpcError({
        code: JsonRpc.ErrorCode.MissingRequiredClientCapability,
        rpcMessage: error.rpcMessage,
        data: { requiredCapabilities: error.requiredCapabilities }
      })
    case "HeaderMismatch":
      return new RpcError({ code: JsonRpc.ErrorCode.HeaderMismatch, rpcMessage: error.rpcMessage, data: error.data })
    case "CapabilityNotSupported":
    case "InvalidPayload":
    case "UnsupportedProtocolVersion":
    case "TooManyInputRounds":
    case "ClientRequestUnavailable":
    case "TaskCancelled":
      return new RpcError({
        code: JsonRpc.ErrorCode.InternalError,
        rpcMessage: `Upstream error: ${firstLine(error.message)}`,
        data: { bridge: error._tag }
      })
    default:
      return toRpcError(error)
  }
}

const LIST_CHANGED: Record<string, string> = {
  ToolListChanged: "notifications/tools/list_changed",
  PromptListChanged: "notifications/prompts/list_changed",
  ResourceListChanged: "notifications/resources/list_changed"
}

/** The one request in flight, if there is exactly one. */
const sole = (running: ReadonlySet<RequestContext>): RequestContext | undefined => {
  if (running.size !== 1) return undefined
  for (const ctx of running) return ctx
  return undefined
}

/**
 * Asks the downstream client what the upstream asked, through the request being served (`running`: the requests in
 * flight); one generator function for every ask (docs/design.md, "Per-request code and the old generation").
 */
const askDownstream = Effect.fnUntraced(function*(
  running: ReadonlySet<RequestContext>,
  method: string,
  params: unknown
): Effect.fn.Return<unknown, RpcError> {
  // Stateless era: the input request comes inside the call's own fiber; handshake era: on the transport's.
  const ctx = (yield* CurrentRequest) ?? sole(running)
  if (ctx === undefined) return yield* refused(method, "nothing says which client request asks")
  const capability = askCapability(method, params)
  if (capability !== undefined && !declares(ctx.session.clientCapabilities, capability)) {
    return yield* new RpcError({
      code: JsonRpc.ErrorCode.MissingRequiredClientCapability,
      rpcMessage: `Missing required client capability: ${capability.join(".")}`,
      data: { requiredCapabilities: { [capability[0]!]: capability.length > 1 ? { [capability[1]!]: {} } : {} } }
    })
  }
  return yield* ctx.request(method, params).pipe(
    Effect.catchCause((cause) => {
      if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
      const error = Cause.squash(cause)
      return Effect.fail(
        error instanceof RpcError ? error : refused(method, firstLine(error instanceof Error ? error.message : String(error)))
      )
    })
  )
})

/**
 * Connects the upstream client over `transport` and builds the front.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function*(
  transport: ClientTransportShape,
  options: HandshakeFrontOptions = {}
): Effect.fn.Return<HandshakeFront, McpClient.HandshakeError, import("effect/Scope").Scope> {
  const running = new Set<RequestContext>()
  const ask = (method: string, params: unknown) => askDownstream(running, method, params)

  const client = yield* McpClient.fromTransport(transport, {
    protocol: options.protocol ?? "auto",
    clientInfo: options.clientInfo ?? { name: "effect-mcp-transport-bridge", version: "0.1.0" },
    requestTimeout: options.requestTimeout ?? Duration.infinity,
    listen: true,
    handlers: {
      createMessage: (params) => ask("sampling/createMessage", params) as Effect.Effect<McpClient.SamplingResult, RpcError>,
      elicit: (params) => ask("elicitation/create", params) as Effect.Effect<McpClient.ElicitResult, RpcError>,
      elicitUrlMode: true,
      listRoots: () =>
        Effect.map(
          ask("roots/list", {}),
          (r) => (isRecord(r) && Array.isArray(r.roots) ? r.roots : []) as ReadonlyArray<McpClient.Root>
        )
    }
  })
  // Every level is asked for: each session's own level is applied at the front.
  if (client.serverCapabilities.logging !== undefined) yield* Effect.ignore(client.setLoggingLevel("debug"))

  const upstreamCapabilities = client.serverCapabilities as Readonly<Record<string, unknown>>
  let server = McpServer.make({
    serverInfo: client.serverInfo,
    instructions: client.instructions,
    capabilities: frontCapabilities(upstreamCapabilities),
    stateless: false
  })
  for (const method of forwardedMethods(upstreamCapabilities)) {
    server = server.pipe(McpServer.method(method, {}, (params: unknown, ctx: RequestContext) =>
      Effect.suspend(() => {
        running.add(ctx)
        return client.request(method, isRecord(params) ? params : undefined, {
          onProgress: (p) => ctx.progress(p.progress, { total: p.total, message: p.message })
        }).pipe(
          Effect.map(legacyResult),
          Effect.mapError(upstreamError),
          Effect.provideService(CurrentRequest, ctx),
          Effect.ensuring(Effect.sync(() => void running.delete(ctx)))
        )
      })))
  }
  const handle = yield* McpServer.toHandler(server)

  yield* client.notifications.pipe(
    Stream.runForEach((n) => {
      if (n._tag === "LoggingMessage") {
        const ctx = sole(running)
        return ctx === undefined ? Effect.void : ctx.log(n.level, n.data, n.logger)
      }
      const method = LIST_CHANGED[n._tag]
      return method === undefined ? Effect.void : handle.notifyAll(method)
    }),
    Effect.forkScoped({ startImmediately: true })
  )
  return { handle, client }
})
