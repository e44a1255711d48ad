/**
 * A one-shot call on a server of the session era (2025-03-26 … 2025-11-25):
 * `initialize`, `notifications/initialized`, the request, and a DELETE that
 * ends the session however the call ends. Loaded by the first call that
 * needs it: a call on the stateless revision never does.
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as JsonRpc from "../../JsonRpc.ts"
import { RpcError, UnsupportedProtocolVersion } from "../../McpError.ts"
import * as ProtocolVersion from "../../ProtocolVersion.ts"
import * as Negotiation from "../Negotiation.ts"
import * as Http from "./HttpExchange.ts"
import { type Answer, type CallContext, type ExchangeError, nextRequest, post, readAnswer } from "./OneShotExchange.ts"
import * as PostExchange from "./PostExchange.ts"

const FIRST_VERSION_WITH_HEADER = "2025-06-18"

/** The session-era server refused `initialize`: what it said, for a re-probe. */
export class InitializeRefused extends Data.TaggedError("InitializeRefused")<{ readonly answer: Answer & { _tag: "Refused" } }> {}

const validSession = (id: string | undefined): string | undefined =>
  id !== undefined && Http.isValidSessionId(id) ? id : undefined

/**
 * `initialize`, `notifications/initialized`, the request, in a scope whose
 * close ends the session with a DELETE (bounded by `closeTimeout`), however
 * the call ends: with its answer, an error, a timeout or an interruption.
 * One generator function for every call (docs/design.md, "Per-request code
 * and the old generation").
 */
export const call = Effect.fnUntraced(function*(
  context: CallContext,
  origin: string,
  requested: string,
  method: string,
  params: unknown,
  auto: boolean
): Effect.fn.Return<unknown, ExchangeError | InitializeRefused, Scope.Scope> {
  let session: string | undefined
  let versionHeader: string | undefined
  // The token the call holds ends the session; a refusal is not worth a sign-in.
  yield* Effect.addFinalizer(() =>
    session === undefined ? Effect.void : PostExchange.deleteSession(context.endpoint, {
      "mcp-session-id": session,
      "mcp-protocol-version": versionHeader
    }, context.closeTimeout)
  )

  const initialize = nextRequest(context, "initialize", {
    protocolVersion: requested,
    capabilities: context.capabilities,
    clientInfo: context.clientInfo
  })
  const response = yield* post(context, initialize, {})
  // Adopted before the body is read: a call interrupted while reading it still ends the session.
  if (Http.isSuccess(response.status)) session = validSession(response.headers["mcp-session-id"])
  const answer = yield* readAnswer(context, response, initialize)
  if (answer._tag === "Refused") return yield* new InitializeRefused({ answer })
  if ("error" in answer.response) return yield* RpcError.fromObject(answer.response.error, "initialize", initialize.id)
  const negotiated = (answer.response.result as { protocolVersion?: unknown } | null)?.protocolVersion
  if (!ProtocolVersion.isSupported(negotiated)) {
    return yield* new UnsupportedProtocolVersion({
      requested,
      received: typeof negotiated === "string" ? negotiated : String(negotiated),
      supported: ProtocolVersion.SUPPORTED
    })
  }
  if (auto) Negotiation.set(context.eras, origin, { era: "legacy", version: negotiated })
  versionHeader = negotiated >= FIRST_VERSION_WITH_HEADER ? negotiated : undefined
  const own = { "mcp-session-id": session, "mcp-protocol-version": versionHeader }

  const initialized = yield* post(context, JsonRpc.notification("notifications/initialized"), own)
  if (!Http.isSuccess(initialized.status)) {
    return yield* Effect.flatMap(Http.httpError(initialized, "notifications/initialized"), Effect.fail)
  }
  yield* Http.discard(initialized)

  const request = nextRequest(context, method, params)
  const reply = yield* readAnswer(context, yield* post(context, request, own), request)
  if (reply._tag === "Refused") return yield* reply.error
  if ("error" in reply.response) return yield* RpcError.fromObject(reply.response.error, method, request.id)
  return reply.response.result
}, Effect.scoped)
