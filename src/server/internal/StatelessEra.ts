/**
 * Serving a request of the stateless era (2026-07-28): everything it needs
 * comes with it in `_meta`, and no session record is read or kept.
 * `server/discover` and `subscriptions/listen` are answered here; a
 * handler's asks of the client become `input_required` results with a
 * signed `requestState`, and the client's retry runs the handler again with
 * the answers; every result carries `resultType` and the server's identity,
 * and the cacheable ones the `resultCache` hints.
 *
 * Also the tools as `tools/list` lists them, for the transport's check of a
 * stateless `tools/call`'s header parameters.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as McpSchema from "effect/ai/McpSchema"
import type { Implementation } from "../../Implementation.ts"
import * as JsonRpc from "../../JsonRpc.ts"
import { CapabilityNotSupported, RpcError } from "../../McpError.ts"
import * as ProtocolVersion from "../../ProtocolVersion.ts"
import * as RequestMeta from "../../RequestMeta.ts"
import * as TaskWire from "../../TaskWire.ts"
import type { HandlerContext } from "../Handler.ts"
import type { RequestContext } from "../RequestContext.ts"
import * as Router from "../Router.ts"
import { isLevel, LEVELS, LiveRequestContext, type Session, statelessAsk, type Stores } from "./HandlerContexts.ts"
import * as RequestState from "./RequestState.ts"
import * as RetiredCodes from "./RetiredCodes.ts"
import { Rounds } from "./Rounds.ts"
import type { McpServerOptions } from "./ServerOptions.ts"
import * as Subscriptions from "./Subscriptions.ts"
import * as TaskMethods from "./TaskMethods.ts"
import * as TaskRunner from "./TaskRunner.ts"
import { isRecord } from "../../internal/Records.ts"

/** The default `requestStateTtl`: 10 minutes. */
export const DEFAULT_REQUEST_STATE_TTL_MS = 600_000

/** The default `requestStateMaxBytes`: 256 KiB. */
export const DEFAULT_REQUEST_STATE_MAX_BYTES = 262_144

/** The default `discovery.ttlMs`: one minute. */
export const DEFAULT_DISCOVERY_TTL_MS = 60_000

export interface Config<R> {
  readonly options: McpServerOptions
  readonly router: Router.Router<RequestContext, R>
  readonly runner: TaskRunner.Runner | undefined
  /** The capabilities the server declares. */
  readonly declared: Record<string, unknown>
  readonly subscriptions: Subscriptions.Subscriptions
  readonly stores: Stores
  /** Timeout of the requests a handler sends the client. */
  readonly timeoutMs: number
  /** The keys that sign and check `requestState`, current first. */
  readonly stateKeys: ReadonlyArray<Uint8Array>
}

export interface StatelessEra<R> {
  readonly serve: (
    request: JsonRpc.JsonRpcRequest,
    hctx: HandlerContext,
    read: Exclude<RequestMeta.ReadMeta, { _tag: "Absent" }>
  ) => Effect.Effect<JsonRpc.JsonRpcResponse, never, R>
  /** The input schema of a tool as `tools/list` lists it, listed once and kept until the tools change. */
  readonly toolInputSchema: (name: string) => Effect.Effect<unknown, never, R>
  /** Forgets the tools listed for `toolInputSchema`: the server announced a change of its tools. */
  readonly toolsChanged: () => void
}

/**
 * A listed tool's schema as it was listed: what it declares is read once per
 * schema object (see MetaHeaders), so a handler that changes its tools'
 * schema objects in place and announces the change is listed afresh.
 */
const snapshot = (schema: unknown): unknown => {
  if (typeof schema !== "object" || schema === null) return schema
  try {
    return structuredClone(schema)
  } catch {
    return schema
  }
}

const withoutRoundFields = (params: Record<string, unknown>): Record<string, unknown> => {
  const { inputResponses: _answers, requestState: _state, ...own } = params
  return own
}

const invalidAnswer = (id: JsonRpc.RequestId, invalid: NonNullable<Rounds["invalid"]>) =>
  Effect.succeed(JsonRpc.failure(
    id,
    JsonRpc.ErrorCode.InvalidParams,
    `Invalid inputResponses: the answer to "${invalid.key}" is not a ${invalid.method} result`,
    { key: invalid.key, reason: invalid.reason }
  ))

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

/** The stateless era's results that must carry cache hints (`CacheableResult`). */
const CACHEABLE: ReadonlySet<string> = new Set([
  "tools/list",
  "prompts/list",
  "resources/list",
  "resources/templates/list",
  "resources/read"
])

/** The methods whose handlers may ask the client through `input_required` results. */
const MULTI_ROUND: ReadonlySet<string> = new Set(["tools/call", "resources/read", "prompts/get"])

/** The answers of a first send that carries none (most requests): one object, never written to. */
const NO_ANSWERS: Readonly<Record<string, unknown>> = Object.freeze({})

export const make = <R>(config: Config<R>): StatelessEra<R> => {
  const { declared, options, router, runner, stores, subscriptions, timeoutMs } = config
  const serverInfoMeta = { [RequestMeta.MetaKey.serverInfo]: options.serverInfo }
  const resultCacheHints = {
    ttlMs: options.resultCache?.ttlMs ?? 0,
    cacheScope: options.resultCache?.cacheScope ?? "private"
  }
  const stateConfig: RequestState.Config = {
    keys: config.stateKeys,
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

  const serveStateless: StatelessEra<R>["serve"] = (request, hctx, read) => {
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
    const ctx = new LiveRequestContext(request, hctx, session, stores, timeoutMs)
    return Effect.mapEager(
      ctx.releasing(Router.dispatch(router, request, ctx, missingCapability)),
      (response) => completeResponse(request.method, response)
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
    // The clock is read only to check a state the client brings back: most calls carry none.
    params.requestState === undefined
      ? serveRound(request, params, hctx, session, 0)
      : Effect.flatMap(Clock.currentTimeMillis, (now) => serveRound(request, params, hctx, session, now))

  const serveRound = (
    request: JsonRpc.JsonRpcRequest,
    params: Record<string, unknown>,
    hctx: HandlerContext,
    session: Session,
    now: number
  ): Effect.Effect<JsonRpc.JsonRpcResponse, never, R> => {
    const inputResponses = params.inputResponses
    const requestState = params.requestState
    const binding = new RequestState.LazyBinding(
      request.method,
      String((request.method === "resources/read" ? params.uri : params.name) ?? ""),
      hctx.principal,
      params
    )
    let answers: Readonly<Record<string, unknown>> = NO_ANSWERS
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
      const signed: Record<string, unknown> = { ...verified.state.answers }
      const responses = isRecord(inputResponses) ? inputResponses : {}
      for (const key of verified.state.asked) {
        if (Object.hasOwn(responses, key) && responses[key] !== undefined) signed[key] = responses[key]
      }
      answers = signed
    }
    const rounds = new Rounds(answers)
    // The handler sees the request as the client first sent it: most first sends carry neither field,
    // and are served as they came.
    const ownRequest = Object.hasOwn(params, "inputResponses") || Object.hasOwn(params, "requestState")
      ? JsonRpc.request(request.id, request.method, withoutRoundFields(params)) as JsonRpc.JsonRpcRequest
      : request
    const ctx = new LiveRequestContext(ownRequest, hctx, session, stores, timeoutMs, rounds)
    const stated = requestState !== undefined
    const answered = ctx.releasing(Router.dispatch(router, ownRequest, ctx, missingCapability))
    // A handler that answered at once without asking is finished here, with no step and no closures of its own.
    if (Exit.isExit(answered) && Exit.isSuccess(answered) && rounds.invalid === undefined && rounds.pending.size === 0) {
      return Effect.succeed(completeResponse(request.method, answered.value as JsonRpc.JsonRpcResponse))
    }
    return Effect.matchCauseEffectEager(answered, {
      onFailure: (cause) =>
        rounds.invalid !== undefined
          ? invalidAnswer(request.id, rounds.invalid)
          : rounds.pending.size > 0 && Cause.hasInterruptsOnly(cause)
          ? inputRequired(request.id, binding, rounds, answers, stated)
          : Effect.failCause(cause),
      // A handler that caught its ask's interruption still lacks the answer.
      onSuccess: (response) =>
        rounds.invalid !== undefined
          ? invalidAnswer(request.id, rounds.invalid)
          : rounds.pending.size > 0
          ? inputRequired(request.id, binding, rounds, answers, stated)
          : Effect.succeed(completeResponse(request.method, response))
    })
  }

  /**
   * The `input_required` answer of a run that asked what it has no answer
   * to. Made when a run asks (most never do); `stated`: the request brought
   * a state back.
   */
  const inputRequired = (
    id: JsonRpc.RequestId,
    binding: RequestState.Binding,
    rounds: Rounds,
    answers: Record<string, unknown>,
    stated: boolean
  ) =>
    // Read the clock again: the state's lifetime starts when it is issued, however long the handler ran.
    Effect.map(Clock.currentTimeMillis, (issuedAt): JsonRpc.JsonRpcResponse => {
      const carried = stated ? answers : Object.fromEntries(Object.entries(answers).filter(([key]) => rounds.used.has(key)))
      const token = RequestState.issue(stateConfig, binding, { answers: carried, asked: Array.from(rounds.pending.keys()) }, issuedAt)
      if (token === undefined) {
        return JsonRpc.failure(
          id,
          JsonRpc.ErrorCode.InternalError,
          `The answers of this request outgrew the requestState bound (${stateConfig.maxBytes} bytes)`
        )
      }
      return JsonRpc.success(id, {
        resultType: "input_required",
        inputRequests: Object.fromEntries(rounds.pending),
        requestState: token,
        _meta: serverInfoMeta
      })
    })

  /**
   * `resultType` (unless the handler chose one), the server's identity in
   * `_meta`, and on the results the revision makes cacheable (lists and
   * `resources/read`) the `resultCache` hints unless the handler gave its own.
   */
  const statelessResult = (method: string, result: unknown): Record<string, unknown> => {
    const r = method === "tools/list" && runner !== undefined ? TaskRunner.withoutExecution(result) : isRecord(result) ? result : {}
    const meta = isRecord(r._meta) ? { ...serverInfoMeta, ...r._meta } : { ...serverInfoMeta }
    return CACHEABLE.has(method)
      ? { resultType: "complete", ...resultCacheHints, ...r, _meta: meta }
      : { resultType: "complete", ...r, _meta: meta }
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
          if (isRecord(tool) && typeof tool.name === "string") found.set(tool.name, snapshot(tool.inputSchema))
        }
      }
      cursor = reply.result.nextCursor
      if (typeof cursor !== "string") break
    }
    return found
  })
  // Counts list changes: a listing begun before a change is used once, not kept.
  let toolListChanges = 0
  // Listed already: a success the transport can read at once (it checks every stateless tools/call).
  const toolInputSchema = (name: string): Effect.Effect<unknown, never, R> =>
    toolSchemas !== undefined ? Effect.succeed(toolSchemas.get(name)) : Effect.suspend(() => {
      if (toolSchemas !== undefined) return Effect.succeed(toolSchemas.get(name))
      const changes = toolListChanges
      return Effect.map(listTools, (found) => {
        if (changes === toolListChanges) toolSchemas = found
        return found.get(name)
      })
    })

  return {
    serve: serveStateless,
    toolInputSchema,
    toolsChanged: () => {
      toolSchemas = undefined
      toolListChanges++
    }
  }
}
