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
import type * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as JsonRpc from "../../JsonRpc.ts"
import { ClientRequestUnavailable } from "../../McpError.ts"
import * as RequestMeta from "../../RequestMeta.ts"
import type { HandlerContext } from "../Handler.ts"
import type { Env } from "./Guard.ts"
import * as MetaHeaders from "./MetaHeaders.ts"
import type * as OutStream from "./OutStream.ts"
import * as RequestBody from "./RequestBody.ts"
import * as ServerSpans from "../internal/ServerSpans.ts"
import type * as Security from "./Security.ts"
import type { Sessions } from "./Sessions.ts"
import * as SlotRefusal from "./SlotRefusal.ts"
import * as SseWire from "./SseWire.ts"

const answer = (id: JsonRpc.RequestId | null, rejection: MetaHeaders.Rejection) =>
  HttpServerResponse.jsonUnsafe(JsonRpc.failure(id, rejection.code, rejection.message, rejection.data), {
    status: rejection.status
  })

const invalid = (id: JsonRpc.RequestId | null, message: string) =>
  answer(id, { status: 400, code: JsonRpc.ErrorCode.InvalidRequest, message })

const unavailable = (method: string) =>
  new ClientRequestUnavailable({ method, reason: "the request being served is of the stateless era (2026-07-28)" })

export const post = (
  env: Env,
  request: HttpServerRequest.HttpServerRequest,
  principal: Security.Principal,
  accepts: RequestBody.Accepts,
  decoded: Exclude<JsonRpc.Decoded, { readonly _tag: "ParseError" }>
) =>
  Effect.gen(function*() {
    const { config, sessions } = env
    if (decoded._tag === "Batch") {
      return invalid(null, "Invalid Request: protocol revision 2026-07-28 takes one message per POST, not a batch")
    }
    const classified = decoded.message
    switch (classified._tag) {
      case "Invalid":
        return invalid(classified.id, `Invalid Request: ${classified.reason}`)
      case "Success":
      case "Failure":
        return invalid(null, "Invalid Request: a client sends no responses in protocol revision 2026-07-28")
    }
    const forbidden = env.authorize?.(principal, [classified])
    if (forbidden !== undefined) return forbidden
    const message = classified.message
    const version = request.headers[RequestMeta.Header.protocolVersion]
    if (!MetaHeaders.isStatelessVersion(version)) {
      return answer("id" in message ? message.id : null, MetaHeaders.notStateless(version, message, config.statelessVersions))
    }

    const run = <A, E>(effect: Effect.Effect<A, E>) =>
      effect.pipe(Effect.updateContext((current: Context.Context<never>) => ServerSpans.carryPeer(current, env.services)))
    // What a requestState is bound to: without it, a state one principal was issued replays for any other.
    const principalId = config.authenticate === undefined ? undefined : principal.id

    if (classified._tag === "Notification") {
      const hctx: HandlerContext = {
        sessionId: undefined,
        requestId: undefined,
        principal: principalId,
        auth: principal.auth,
        notify: () => Effect.void,
        request: (method) => Effect.fail(unavailable(method))
      }
      yield* Effect.ignore(run(Effect.suspend(() => env.handler(classified.message, hctx))))
      return HttpServerResponse.empty({ status: 202 })
    }

    const rpc = classified.message
    const rejected = MetaHeaders.checkRequest(request.headers, rpc, config.statelessVersions)
    if (rejected !== undefined) return answer(rpc.id, rejected)
    const schemaOf = env.handler.toolInputSchema
    if (rpc.method === "tools/call" && schemaOf !== undefined) {
      const params = rpc.params as { readonly name?: unknown; readonly arguments?: unknown }
      if (typeof params.name === "string") {
        const schema = yield* run(schemaOf(params.name))
        const mismatch = MetaHeaders.checkParams(request.headers, schema, params.arguments)
        if (mismatch !== undefined) return answer(rpc.id, mismatch)
      }
    }

    const grant = yield* sessions.enterSlots(principal.id, undefined, 1)
    if (grant.granted === 0) return yield* SlotRefusal.refuse(grant.short!)
    // The answer alone needs no response stream: one opens when the handler first sends the client
    // something on the way (an SSE client only), and this exchange waits for that or the answer.
    const route = new LazyStream(sessions)
    const hctx: HandlerContext = {
      sessionId: undefined,
      requestId: rpc.id,
      principal: principalId,
      auth: principal.auth,
      // A JSON-only client reads the answer alone.
      notify: accepts.sse
        ? (method, params) =>
          Effect.suspend(() => {
            const out = route.open()
            return out === undefined
              ? Effect.void
              : Effect.asVoid(out.offer(params === undefined ? { jsonrpc: "2.0", method } : { jsonrpc: "2.0", method, params }))
          })
        : () => Effect.void,
      request: (method) => Effect.fail(unavailable(method))
    }
    const work = Effect.suspend(() => env.handler(rpc, hctx)).pipe(
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause)
          ? Effect.failCause(cause)
          : Effect.as(
            Effect.logWarning(`MCP handler failed on ${rpc.method}`, Cause.pretty(cause)),
            JsonRpc.failure(rpc.id, JsonRpc.ErrorCode.InternalError, "Internal error")
          )
      ),
      Effect.flatMap((reply) => reply === null ? Effect.void : route.deliver(reply)),
      Effect.ensuring(Effect.suspend(() => route.finish()))
    )
    yield* sessions.runStateless(run(work))
    // The exchange gone first: no stream opens any more, and one that opened ends for good.
    yield* Effect.onInterrupt(route.openedOrAnswered, () => route.close)

    const out = route.opened
    if (out === undefined) return directAnswer(route.direct, accepts, config.responseMode)
    // A stream ends for good with its exchange (one finalizer only where there is a stream: each costs at close).
    yield* Effect.addFinalizer(() => out.close)
    const streams = yield* out.awaitStreamingOrEnd
    if (streams) {
      return SseWire.response(
        out.attach({ priming: false, retryMs: undefined, lastEventId: undefined, cut: SseWire.cutter(request) }),
        {}
      )
    }
    const replies = yield* out.takeQueued
    const reply = replies.find((q) => "id" in q.message && !("method" in q.message))
    return reply === undefined
      ? HttpServerResponse.empty({ status: 202 })
      : jsonOrEvent(reply.message as JsonRpc.JsonRpcResponse, reply.json, accepts, config.responseMode)
  })

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

const directAnswer = (
  reply: JsonRpc.JsonRpcResponse | undefined,
  accepts: RequestBody.Accepts,
  responseMode: Env["config"]["responseMode"]
) =>
  reply === undefined
    ? HttpServerResponse.empty({ status: 202 })
    : jsonOrEvent(reply, JSON.stringify(reply), accepts, responseMode)

/**
 * Where a stateless request's answer goes: straight to the exchange, unless
 * the handler sent the client something first (then a response stream of
 * this request alone, opened on that first message).
 */
class LazyStream {
  opened: OutStream.OutStream | undefined = undefined
  direct: JsonRpc.JsonRpcResponse | undefined = undefined
  /** The work ended or the exchange closed: no stream opens any more. */
  #finished = false
  readonly #settled = Deferred.makeUnsafe<void>()
  readonly #sessions: Sessions
  constructor(sessions: Sessions) {
    this.#sessions = sessions
  }
  /** The response stream, opened now if it is not yet; `undefined` once the request is over. */
  open(): OutStream.OutStream | undefined {
    if (this.opened === undefined && !this.#finished) {
      this.opened = this.#sessions.requestStreamUnsafe()
      Deferred.doneUnsafe(this.#settled, Effect.void)
    }
    return this.opened
  }
  deliver(reply: JsonRpc.JsonRpcResponse): Effect.Effect<unknown> {
    if (this.opened !== undefined) return this.opened.offer(reply)
    this.direct = reply
    return Effect.void
  }
  /** The work ended: its stream (if one opened) ends after what it holds, or the answer is ready. */
  finish(): Effect.Effect<void> {
    this.#finished = true
    Deferred.doneUnsafe(this.#settled, Effect.void)
    return this.opened === undefined ? Effect.void : this.opened.end
  }
  get close(): Effect.Effect<void> {
    return Effect.suspend(() => {
      this.#finished = true
      return this.opened === undefined ? Effect.void : this.opened.close
    })
  }
  /** Completes when the stream opens or the work ends, whichever comes first. */
  get openedOrAnswered(): Effect.Effect<void> {
    return Deferred.await(this.#settled)
  }
}
