/**
 * A method table: JSON-RPC method name → Schema-decoded handler. It knows
 * nothing of the MCP lifecycle (that is `McpServer`); it only turns one
 * request into one reply with the JSON-RPC error rules: unknown method
 * -32601, params that do not decode -32602 (with the decoder's message), a
 * handler's `RpcError` as is, any other failure or defect -32603 without
 * details (the cause is logged, reported to Effect's `ErrorReporter`s and
 * set on the request's span). Interruption (the client cancelled) is never turned into a reply.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import { buildNow } from "../internal/BuildNow.ts"
import * as CompiledDecode from "../internal/CompiledDecode.ts"
import * as JsonRpc from "../JsonRpc.ts"
import { RpcError } from "../McpError.ts"
import * as ServerSpans from "./internal/ServerSpans.ts"

/**
 * The entry of one request method: how its params are decoded, its result encoded, and who handles it.
 *
 * @since 0.1.0
 * @category models
 */
export interface RequestRoute<Ctx, R> {
  readonly decode: (params: unknown) => Effect.Effect<unknown, Schema.SchemaError, R>
  readonly encode: (result: unknown) => Effect.Effect<unknown, Schema.SchemaError, R>
  /** Fails with `RpcError` to choose the error reply; any other failure becomes -32603. */
  readonly handle: (params: any, context: Ctx) => Effect.Effect<unknown, unknown, R>
}

/**
 * The entry of one notification method: how its params are decoded, and who handles it.
 *
 * @since 0.1.0
 * @category models
 */
export interface NotificationRoute<Ctx, R> {
  readonly decode: (params: unknown) => Effect.Effect<unknown, Schema.SchemaError, R>
  readonly handle: (params: any, context: Ctx) => Effect.Effect<void, unknown, R>
}

/**
 * A method table, immutable: `add` and `addNotification` return a new one. `Ctx` is what every
 * handler receives beside its params; `R`, what the handlers need.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import * as Schema from "effect/Schema"
 * import type { Handler, HandlerContext } from "effect-mcp-transport/server/Handler"
 * import * as Router from "effect-mcp-transport/server/Router"
 *
 * const router = Router.add(
 *   Router.empty<HandlerContext>(),
 *   "math/add",
 *   { params: Schema.Struct({ a: Schema.Number, b: Schema.Number }) },
 *   ({ a, b }) => Effect.succeed({ sum: a + b })
 * )
 *
 * // A handler with the JSON-RPC error rules and no MCP lifecycle (that is McpServer's).
 * const handler: Handler = (message, context) =>
 *   "id" in message
 *     ? Router.dispatch(router, message, context)
 *     : Effect.as(Router.dispatchNotification(router, message, context), null)
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface Router<Ctx, R = never> {
  readonly requests: ReadonlyMap<string, RequestRoute<Ctx, R>>
  readonly notifications: ReadonlyMap<string, NotificationRoute<Ctx, R>>
}

/**
 * A router with no methods, for handlers that receive a `Ctx`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const empty = <Ctx>(): Router<Ctx> => ({ requests: new Map(), notifications: new Map() })

/**
 * The schemas of a request method, both optional.
 *
 * @since 0.1.0
 * @category models
 */
export interface RouteSchemas<P extends Schema.Top, A extends Schema.Top> {
  /** Decodes `params` (absent params decode as `{}`). Default: passes them through. */
  readonly params?: P | undefined
  /** Encodes the handler's result to JSON. Default: the result is sent as it is. */
  readonly result?: A | undefined
}

const identity = (u: unknown) => Effect.succeed(u)

/**
 * Adds (or replaces) the handler of a request method.
 *
 * @since 0.1.0
 * @category schemas
 */
export const add = <Ctx, R, P extends Schema.Top = typeof Schema.Unknown, A extends Schema.Top = typeof Schema.Unknown, R2 = never>(
  router: Router<Ctx, R>,
  method: string,
  schemas: RouteSchemas<P, A>,
  handle: (params: P["Type"], context: Ctx) => Effect.Effect<A["Type"], unknown, R2>
): Router<Ctx, R | R2 | P["DecodingServices"] | A["EncodingServices"]> => {
  const requests = new Map<string, RequestRoute<Ctx, any>>(router.requests)
  requests.set(method, {
    decode: schemas.params === undefined
      ? identity
      : CompiledDecode.decodeUnknownEffect(schemas.params as Schema.Decoder<unknown, P["DecodingServices"]>),
    encode: schemas.result === undefined
      ? identity
      : Schema.encodeUnknownEffect(schemas.result as unknown as Schema.Codec<unknown, unknown, never, A["EncodingServices"]>),
    handle
  })
  return { requests, notifications: router.notifications }
}

/**
 * Adds (or replaces) the handler of a notification method. Its failures are dropped: notifications get no reply.
 *
 * @since 0.1.0
 * @category schemas
 */
export const addNotification = <Ctx, R, P extends Schema.Top = typeof Schema.Unknown, R2 = never>(
  router: Router<Ctx, R>,
  method: string,
  schemas: { readonly params?: P | undefined },
  handle: (params: P["Type"], context: Ctx) => Effect.Effect<void, unknown, R2>
): Router<Ctx, R | R2 | P["DecodingServices"]> => {
  const notifications = new Map<string, NotificationRoute<Ctx, any>>(router.notifications)
  notifications.set(method, {
    decode: schemas.params === undefined
      ? identity
      : CompiledDecode.decodeUnknownEffect(schemas.params as Schema.Decoder<unknown, P["DecodingServices"]>),
    handle
  })
  return { requests: router.requests, notifications }
}

/**
 * The -32602 reply to request `id` whose params did not decode, with the decoder's message.
 *
 * @since 0.1.0
 * @category constructors
 */
export const invalidParams = (id: JsonRpc.RequestId, error: Schema.SchemaError): JsonRpc.JsonRpcFailure =>
  JsonRpc.failure(id, JsonRpc.ErrorCode.InvalidParams, `Invalid params: ${error.message}`)

/**
 * Answers one request. Total: every failure and defect becomes an error
 * reply; only interruption passes through (so the transport drops the reply).
 * A failure that is no `RpcError` (nor mapped to one) is answered -32603
 * with no detail, and its cause is logged, reported through Effect's
 * `ErrorReporter`s and set on the request's span.
 *
 * @since 0.1.0
 * @category utils
 */
export const dispatch = <Ctx, R>(
  router: Router<Ctx, R>,
  request: JsonRpc.JsonRpcRequest,
  context: Ctx,
  /** Turns a handler's other failures into an error reply (`undefined`: -32603). */
  toRpcError?: ((error: unknown) => RpcError | undefined) | undefined
): Effect.Effect<JsonRpc.JsonRpcResponse, never, R> => {
  const route = router.requests.get(request.method)
  if (route === undefined) return Effect.succeed(JsonRpc.methodNotFound(request.id, request.method))
  const answer = (result: unknown): Effect.Effect<JsonRpc.JsonRpcResponse> =>
    Effect.succeed(JsonRpc.success(request.id, result ?? {}))
  const onFailure = (cause: Cause.Cause<unknown>): Effect.Effect<JsonRpc.JsonRpcResponse> => {
    if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
    const failure = cause.reasons.find((r) => r._tag === "Fail")
    const mapped = failure !== undefined && failure._tag === "Fail"
      ? failure.error instanceof RpcError ? failure.error : toRpcError?.(failure.error)
      : undefined
    if (mapped !== undefined) {
      const e = mapped
      return Effect.succeed(JsonRpc.failure(request.id, e.code, e.rpcMessage, e.data))
    }
    return Effect.as(ServerSpans.unexpectedFailure(request.method, cause), JsonRpc.internalError(request.id))
  }
  // A route without a result schema sends the result as it is: no encoding step.
  // A handler or encoder that answered at once (an `Exit`) is matched at once, with no step of its own.
  const onSuccess = route.encode === identity
    ? answer
    : (result: unknown) => Effect.matchCauseEffectEager(route.encode(result), { onFailure, onSuccess: answer })
  const serve = (params: unknown): Effect.Effect<JsonRpc.JsonRpcResponse, never, R> => {
    // A handler that throws instead of returning an effect dies like one that dies.
    const handled: Effect.Effect<unknown, unknown, R> = buildNow(() => route.handle(params, context))
    return Effect.matchCauseEffectEager(handled, { onFailure, onSuccess })
  }
  const decoded = route.decode(request.params ?? {})
  // A Schema parser without async steps answers with an Exit: params that decoded go straight on.
  if (Exit.isExit(decoded) && Exit.isSuccess(decoded)) return serve(decoded.value)
  return Effect.matchEffect(decoded, {
    onFailure: (error) => Effect.succeed<JsonRpc.JsonRpcResponse>(invalidParams(request.id, error)),
    onSuccess: serve
  })
}

/**
 * Runs the handler of a notification, if there is one; decode failures and handler failures are dropped.
 *
 * @since 0.1.0
 * @category utils
 */
export const dispatchNotification = <Ctx, R>(
  router: Router<Ctx, R>,
  notification: JsonRpc.JsonRpcNotification,
  context: Ctx
): Effect.Effect<void, never, R> => {
  const route = router.notifications.get(notification.method)
  if (route === undefined) return Effect.void
  return route.decode(notification.params ?? {}).pipe(
    Effect.flatMap((params) => route.handle(params, context)),
    Effect.catchCause((cause) => (Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause as Cause.Cause<never>) : Effect.void))
  )
}
