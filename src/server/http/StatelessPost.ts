/**
 * A POST of the stateless era (2026-07-28) on the Streamable HTTP endpoint:
 * one message, checked against its headers (see MetaHeaders), answered by
 * the handler on its own, with no session. The answer is JSON unless the
 * handler sends notifications while it works (then an SSE stream for this
 * request alone, without event ids: nothing is resumable in this era).
 *
 * The handler runs in the HTTP exchange's scope, so the exchange ending
 * ends it: a client that closes the response stream cancels its request
 * (the era's rule), and nothing more is written for it.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Scope from "effect/Scope"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as JsonRpc from "../../JsonRpc.ts"
import { ClientRequestUnavailable } from "../../McpError.ts"
import * as RequestMeta from "../../RequestMeta.ts"
import type { HandlerContext } from "../Handler.ts"
import type { Env } from "./Guard.ts"
import * as MetaHeaders from "./MetaHeaders.ts"
import * as OwedReplies from "./OwedReplies.ts"
import type * as OutStream from "./OutStream.ts"
import * as RequestBody from "./RequestBody.ts"
import type { RequestHeaders } from "./RequestHeaders.ts"
import * as ServerSpans from "../internal/ServerSpans.ts"
import type * as Security from "./Security.ts"
import type { Sessions } from "./Sessions.ts"
import * as SlotRefusal from "./SlotRefusal.ts"
import * as SseWire from "./SseWire.ts"
import type * as StatelessRequests from "./StatelessRequests.ts"
import { WakeOnce } from "./WakeOnce.ts"

const answer = (id: JsonRpc.RequestId | null, rejection: MetaHeaders.Rejection) =>
  HttpServerResponse.jsonUnsafe(JsonRpc.failure(id, rejection.code, rejection.message, rejection.data), {
    status: rejection.status
  })

const invalid = (id: JsonRpc.RequestId | null, message: string) =>
  answer(id, { status: 400, code: JsonRpc.ErrorCode.InvalidRequest, message })

const unavailable = (method: string) =>
  new ClientRequestUnavailable({ method, reason: "the request being served is of the stateless era (2026-07-28)" })

/** What a handler asks of a client of this era: nothing can answer it. */
const refuseAsk: HandlerContext["request"] = (method) => Effect.fail(unavailable(method))

const notifyNobody: HandlerContext["notify"] = () => Effect.void

type Response = Effect.Effect<HttpServerResponse.HttpServerResponse, never, Scope.Scope>

export const post = (
  env: Env,
  request: HttpServerRequest.HttpServerRequest,
  headers: RequestHeaders,
  principal: Security.Principal,
  accepts: RequestBody.Accepts,
  decoded: Exclude<JsonRpc.Decoded, { readonly _tag: "ParseError" }>
): Response => {
  if (decoded._tag === "Batch") {
    return Effect.succeed(invalid(null, "Invalid Request: protocol revision 2026-07-28 takes one message per POST, not a batch"))
  }
  const classified = decoded.message
  switch (classified._tag) {
    case "Invalid":
      return Effect.succeed(invalid(classified.id, `Invalid Request: ${classified.reason}`))
    case "Success":
    case "Failure":
      return Effect.succeed(invalid(null, "Invalid Request: a client sends no responses in protocol revision 2026-07-28"))
  }
  const forbidden = env.authorize?.(principal, [classified])
  if (forbidden !== undefined) return Effect.succeed(forbidden)
  const message = classified.message
  const version = headers[RequestMeta.Header.protocolVersion]
  if (!MetaHeaders.isStatelessVersion(version)) {
    return Effect.succeed(
      answer("id" in message ? message.id : null, MetaHeaders.notStateless(version, message, env.config.statelessVersions))
    )
  }
  // What a requestState is bound to: without it, a state one principal was issued replays for any other.
  const principalId = env.config.authenticate === undefined ? undefined : principal.id

  if (classified._tag === "Notification") {
    const hctx: HandlerContext = {
      sessionId: undefined,
      requestId: undefined,
      principal: principalId,
      auth: principal.auth,
      notify: notifyNobody,
      request: refuseAsk
    }
    return Effect.as(Effect.ignore(withServices(env, Effect.suspend(() => env.handler(classified.message, hctx)))), ACCEPTED)
  }

  const rpc = classified.message
  const rejected = MetaHeaders.checkRequest(headers, rpc, env.config.statelessVersions)
  if (rejected !== undefined) return Effect.succeed(answer(rpc.id, rejected))
  const schemaOf = env.handler.toolInputSchema
  if (rpc.method === "tools/call" && schemaOf !== undefined) {
    const params = rpc.params as { readonly name?: unknown; readonly arguments?: unknown }
    if (typeof params.name === "string") {
      const checked = (schema: unknown): Response => {
        const mismatch = MetaHeaders.checkParams(headers, schema, params.arguments)
        return mismatch !== undefined
          ? Effect.succeed(answer(rpc.id, mismatch))
          : serve(env, request, principal, accepts, rpc, principalId)
      }
      const schema = schemaOf(params.name)
      // A tool list already read comes back as a success: no run in the handler's services for it.
      return Exit.isExit(schema) && Exit.isSuccess(schema)
        ? checked(schema.value)
        : Effect.flatMap(withServices(env, schema), checked)
    }
  }
  return serve(env, request, principal, accepts, rpc, principalId)
}

const ACCEPTED = HttpServerResponse.empty({ status: 202 })

/** Runs `effect` with the transport's services (and the request's peer and span) in place of the HTTP request's. */
const withServices = <A, E>(env: Env, effect: Effect.Effect<A, E>) =>
  Effect.updateContext(effect, (current: Context.Context<never>) => ServerSpans.carryRequest(current, env.services))

/** A request the checks let through: a slot taken, its handler run, its answer or stream returned. */
const serve = (
  env: Env,
  request: HttpServerRequest.HttpServerRequest,
  principal: Security.Principal,
  accepts: RequestBody.Accepts,
  rpc: JsonRpc.JsonRpcRequest,
  principalId: string | undefined
): Response =>
  // One step registers the request's end, the next takes its slot and starts its handler: the request's
  // scope and clock are read from its fiber.
  Effect.withFiber((exchange): Response => {
    const { config, sessions } = env
    const scope = Context.getUnsafe(exchange.context, Scope.Scope)
    // The request's end leaves its slot, and first interrupts its handler if that still runs. The slot
    // is taken and the handler started in the step after (the one that reads the finalizer's result),
    // so that neither is ever without its way out.
    let leave: Effect.Effect<void> | undefined
    let handler: Fiber.Fiber<unknown, unknown> | undefined
    const end = () =>
      leave === undefined
        ? Effect.void
        : handler === undefined || handler.pollUnsafe() !== undefined
        ? leave
        : Effect.andThen(Fiber.interrupt(handler), leave)
    return Effect.flatMap(Scope.addFinalizerExit(scope, end), (): Response => {
      // A request whose scope closed already takes no slot and runs nothing.
      if (scope.state._tag === "Closed") return Effect.interrupt
      const entry = sessions.enterSlotsUnsafe(principal.id, undefined, 1, exchange.getRef(Clock.Clock))
      if (entry.leave === undefined) return SlotRefusal.refuse(entry.grant.short!)
      leave = entry.leave
      // The answer alone needs no response stream: one opens when the handler first sends the client
      // something on the way (an SSE client only), and this exchange waits for that or the answer.
      const route = new LazyStream(sessions, env.services, rpc.id)
      const run = sessions.runStatelessUnsafe(exchange, () => work(env, rpc, principal, principalId, accepts, route), route)
      // A handler done by now (it started at once, or answered as it was built) with no stream opened: its
      // answer goes as it is.
      if (route.finished && route.opened === undefined) {
        return Effect.succeed(directAnswer(rpc.id, route.direct, accepts, config.responseMode))
      }
      if (!Exit.isExit(run)) handler = run
      // The exchange gone first: no stream opens any more, and one that opened ends for good.
      return Effect.flatMap(Effect.onInterrupt(route.openedOrAnswered, () => route.close), () => {
        const out = route.opened
        if (out === undefined) return Effect.succeed(directAnswer(rpc.id, route.direct, accepts, config.responseMode))
        // The stream ends after what it holds once the handler has ended, however it ends.
        return Effect.andThen(
          Effect.forkIn(Effect.andThen(handler === undefined ? Effect.void : Fiber.await(handler), out.end), scope),
          streamed(request, rpc.id, accepts, config.responseMode, out)
        )
      })
    })
  })

/**
 * The handler's run for one request, its outcome delivered to `route`: one
 * step for the outcome, the handler's end being its fiber's (see `LazyStream.onEnd`).
 */
const work = (
  env: Env,
  rpc: JsonRpc.JsonRpcRequest,
  principal: Security.Principal,
  principalId: string | undefined,
  accepts: RequestBody.Accepts,
  route: LazyStream
) => {
  const hctx: HandlerContext = {
    sessionId: undefined,
    requestId: rpc.id,
    principal: principalId,
    auth: principal.auth,
    // The handler runs with the transport's services alone (`LazyStream.services`).
    observed: env.observed,
    // A JSON-only client reads the answer alone.
    notify: accepts.sse
      ? (method, params) =>
        Effect.suspend(() => {
          const out = route.open()
          return out === undefined
            ? Effect.void
            : Effect.asVoid(out.offer(params === undefined ? { jsonrpc: "2.0", method } : { jsonrpc: "2.0", method, params }))
        })
      : notifyNobody,
    request: refuseAsk
  }
  // A handler that answered at once (an `Exit`) is delivered in this step.
  return Effect.matchCauseEffectEager(env.handler(rpc, hctx), {
    onFailure: (cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.failCause(cause)
        : Effect.andThen(
          Effect.logWarning(`MCP handler failed on ${rpc.method}`, Cause.pretty(cause)),
          () => route.deliver(JsonRpc.internalError(rpc.id))
        ),
    // A handler owes a request its reply: without one the client would wait, or get a 202 that means none is coming.
    onSuccess: (reply) =>
      reply === null
        ? Effect.andThen(Effect.logWarning(`MCP handler gave no reply to ${rpc.method}`), () => route.deliver(JsonRpc.internalError(rpc.id)))
        : route.deliver(reply)
  })
}

/** The answer of a request whose handler opened a stream: that stream, or (nothing streamed) what it holds. */
const streamed = (
  request: HttpServerRequest.HttpServerRequest,
  id: JsonRpc.RequestId,
  accepts: RequestBody.Accepts,
  responseMode: Env["config"]["responseMode"],
  out: OutStream.OutStream
): Response =>
  // Combinators, not `Effect.gen` (docs/design.md, "Per-request code and the old generation").
  // A stream ends for good with its exchange (one finalizer only where there is a stream: each costs at close).
  Effect.andThen(
    Effect.addFinalizer(() => out.close),
    Effect.flatMap(out.awaitStreamingOrEnd, (streams): Response => {
      if (streams) {
        return Effect.succeed(SseWire.response(
          out.attach({ priming: false, retryMs: undefined, lastEventId: undefined, cut: SseWire.cutter(request) }),
          {}
        ))
      }
      return Effect.map(out.takeQueued, (replies) => {
        const reply = replies.find((q) => "id" in q.message && !("method" in q.message))
        return reply === undefined
          ? directAnswer(id, undefined, accepts, responseMode)
          : jsonOrEvent(reply.message as JsonRpc.JsonRpcResponse, reply.json, accepts, responseMode)
      })
    })
  )

const jsonOrEvent = (
  reply: JsonRpc.JsonRpcResponse,
  json: string,
  accepts: RequestBody.Accepts,
  responseMode: Env["config"]["responseMode"]
) => {
  const status = MetaHeaders.statusOf(reply)
  // Errors keep their status (a client tells the eras apart by it), so they go as JSON.
  if (status === 200 && (!accepts.json || responseMode === "sse")) {
    return SseWire.whole(SseWire.event(json), {})
  }
  return HttpServerResponse.text(json, { status, contentType: "application/json" })
}

/** The answer without a stream; a request the work left without a reply (it was cut short) gets -32603, never a bare 202. */
const directAnswer = (
  id: JsonRpc.RequestId,
  reply: JsonRpc.JsonRpcResponse | undefined,
  accepts: RequestBody.Accepts,
  responseMode: Env["config"]["responseMode"]
) => {
  const answer = reply ?? JsonRpc.internalError(id)
  return jsonOrEvent(answer, JSON.stringify(answer), accepts, responseMode)
}

/**
 * Where a stateless request's answer goes: straight to the exchange, unless
 * the handler sent the client something first (then a response stream of
 * this request alone, opened on that first message). Also how the handler's
 * fiber runs (`StatelessRequests.StatelessRun`): with the transport's
 * services and the request's peer and span, and this marked finished when it ends.
 */
class LazyStream implements StatelessRequests.StatelessRun {
  opened: OutStream.OutStream | undefined = undefined
  direct: JsonRpc.JsonRpcResponse | undefined = undefined
  /** The work ended or the exchange closed: no stream opens any more. */
  finished = false
  /** Woken when the stream opens or the work ends. */
  readonly #settled = new WakeOnce()
  readonly #sessions: Sessions
  readonly #services: Context.Context<never>
  readonly #id: JsonRpc.RequestId
  constructor(sessions: Sessions, services: Context.Context<never>, id: JsonRpc.RequestId) {
    this.#sessions = sessions
    this.#services = services
    this.#id = id
  }
  /** The response stream, opened now if it is not yet; `undefined` once the request is over. */
  open(): OutStream.OutStream | undefined {
    if (this.opened === undefined && !this.finished) {
      this.opened = this.#sessions.requestStreamUnsafe()
      this.#settled.wake()
    }
    return this.opened
  }
  deliver(reply: JsonRpc.JsonRpcResponse): Effect.Effect<unknown> {
    if (this.opened !== undefined) return this.opened.offer(reply)
    this.direct = reply
    return Effect.void
  }
  /** The transport's services in place of the HTTP request's, with the request's peer and span. */
  services(current: Context.Context<never>): Context.Context<never> {
    return ServerSpans.carryRequest(current, this.#services)
  }
  /** The work ended: no stream opens any more, and the answer (or the stream) is ready. */
  onEnd(): void {
    this.finished = true
    this.#settled.wake()
  }
  /** The transport shuts down before the work ended: the client is told so, as the answer or on its stream. */
  onShutdown(): Effect.Effect<void> {
    return this.deliver(OwedReplies.interruptedByShutdown(this.#id))
  }
  get close(): Effect.Effect<void> {
    return Effect.suspend(() => {
      this.finished = true
      this.#settled.wake()
      return this.opened === undefined ? Effect.void : this.opened.close
    })
  }
  /** Completes when the stream opens or the work ends, whichever comes first. */
  get openedOrAnswered(): Effect.Effect<void> {
    return this.#settled.await
  }
}
