/**
 * The HTTP side of a Streamable HTTP client: where its POSTs and GETs go and
 * with which headers, the session they carry (`Mcp-Session-Id`, adopted
 * from the initialize answer, expired by a 404, deleted at close) and the
 * mode the protocol version puts it in: session mode, or the stateless mode
 * (2026-07-28 on) with its routing headers on every POST and no session.
 * Non-2xx answers become typed errors here; 2xx answers go back unread.
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as SubscriptionRef from "effect/SubscriptionRef"
import type * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import type { AuthError } from "../../AuthError.ts"
import type * as JsonRpc from "../../JsonRpc.ts"
import {
  type HttpError,
  MalformedMessage,
  type MessageTooLarge,
  type RedirectRefused,
  SessionExpired,
  type TransportClosed
} from "../../McpError.ts"
import * as ProtocolVersion from "../../ProtocolVersion.ts"
import type { OAuthProviderShape } from "../auth/OAuthProvider.ts"
import { ConnectionState } from "../ClientTransport.ts"
import * as Http from "./HttpExchange.ts"
import * as PostExchange from "./PostExchange.ts"
import * as StatelessHeaders from "./StatelessHeaders.ts"
import type * as UnavailableRetry from "./UnavailableRetry.ts"

type Response = HttpClientResponse.HttpClientResponse

export type PostError = HttpError | RedirectRefused | SessionExpired | TransportClosed | MessageTooLarge | AuthError

const FIRST_VERSION_WITH_HEADER = "2025-06-18"

export interface SessionChannelOptions extends Http.HeaderSource {
  readonly client: HttpClient.HttpClient
  readonly url: string
  readonly maxBytes: number
  readonly auth: OAuthProviderShape | undefined
  /** The connection state the channel moves (Ready on a 2xx, SessionExpired on a 404). */
  readonly state: SubscriptionRef.SubscriptionRef<ConnectionState>
  readonly sessionId: string | undefined
  readonly protocolVersion: string | undefined
  readonly closeTimeout: Duration.Input
  readonly retryUnavailable: UnavailableRetry.RetryUnavailableOptions | false | undefined
}

export interface SessionChannel {
  /** The stateless mode's headers while a stateless revision is set; `undefined` in session mode. */
  readonly stateless: () => StatelessHeaders.StatelessHeaders | undefined
  /** The current `Mcp-Session-Id`; always `undefined` in the stateless mode. */
  readonly session: () => string | undefined
  readonly protocolVersion: () => string | undefined
  /**
   * Sets the negotiated version, and with it the mode; whether the channel is
   * now in the stateless mode (a session from before is dropped, not deleted:
   * it is not used again).
   */
  readonly setProtocolVersion: (version: string) => boolean
  /**
   * One POST, in session mode, or in the stateless mode when `modern` is
   * given (`extra`: the request's own headers, sent in that mode only).
   */
  readonly post: (
    message: JsonRpc.JsonRpcMessage,
    modern: StatelessHeaders.StatelessHeaders | undefined,
    extra: Readonly<Record<string, string>> | undefined
  ) => Effect.Effect<Response, PostError>
  /** Opens a GET SSE stream (standalone listener, or resuming after `lastEventId`). */
  readonly openGet: (lastEventId: string | undefined) => Effect.Effect<Response, PostError | MalformedMessage>
  /** A 2xx answer: Connecting becomes Ready; an initialize answer also ends an expired session. */
  readonly markReady: (initialize: boolean) => Effect.Effect<void>
  /** Takes the session id of an initialize answer (none, or one that is not visible ASCII, leaves none). */
  readonly adoptSession: (response: Response) => Effect.Effect<void>
  /** Ends the session with a DELETE, unless there is none or it expired. */
  readonly endSession: Effect.Effect<void>
}

export const make = (options: SessionChannelOptions): SessionChannel => {
  const { client, state, url } = options
  const endpoint = PostExchange.endpoint(client, url, options.maxBytes, options)

  let protocolVersion: string | undefined = options.protocolVersion
  let stateless: StatelessHeaders.StatelessHeaders | undefined = protocolVersion !== undefined &&
      ProtocolVersion.eraOf(protocolVersion) === "modern"
    ? StatelessHeaders.make(protocolVersion)
    : undefined
  let session: string | undefined = stateless === undefined ? options.sessionId : undefined
  let expiredSession: string | undefined

  const setState = (next: ConnectionState) =>
    SubscriptionRef.update(state, (current) => current._tag === "Closed" ? current : next)

  const markReady = (initialize: boolean): Effect.Effect<void> => {
    // Read first: nearly every answer finds the state settled already, and an update takes the ref's lock.
    const now = SubscriptionRef.getUnsafe(state)._tag
    if (now !== "Connecting" && !(initialize && now === "SessionExpired")) return Effect.void
    return SubscriptionRef.update(state, (current) => {
      if (current._tag === "Connecting") return ConnectionState.Ready()
      if (initialize && current._tag === "SessionExpired") return ConnectionState.Ready()
      return current
    })
  }

  const expire = (sessionId: string) =>
    Effect.suspend(() => {
      expiredSession = sessionId
      return Effect.andThen(setState(ConnectionState.SessionExpired({ sessionId })), Effect.fail(new SessionExpired({ sessionId })))
    })

  const versionHeader = (): string | undefined =>
    protocolVersion !== undefined && protocolVersion >= FIRST_VERSION_WITH_HEADER ? protocolVersion : undefined

  const adoptSession = (response: Response) =>
    Effect.suspend(() => {
      const id = Http.headersOf(response)["mcp-session-id"]
      expiredSession = undefined
      if (id !== undefined && !Http.isValidSessionId(id)) {
        session = undefined
        return Effect.logWarning("MCP HTTP: ignoring a session id that is not visible ASCII")
      }
      session = id
      return Effect.void
    })

  const post: SessionChannel["post"] = (message, modern, extra) => {
    const body = PostExchange.encode(endpoint, message)
    if (!("contentLength" in body)) return Effect.fail(body)
    const initialize = "method" in message && message.method === "initialize" && "id" in message
    // A fresh initialize starts a new session: no stale id, no version yet. The stateless mode has no session.
    const sentSession = initialize || modern !== undefined ? undefined : session
    const own = modern !== undefined ? modern.forMessage(message, extra) : {
      accept: "application/json, text/event-stream",
      "mcp-session-id": sentSession,
      "mcp-protocol-version": initialize ? undefined : versionHeader()
    }
    return Effect.flatMap(PostExchange.post(endpoint, message, body, own), (response): Effect.Effect<Response, PostError> => {
      if (Http.isSuccess(response.status)) return Effect.succeed(response)
      if (response.status === 404 && sentSession !== undefined) return Effect.andThen(Http.discard(response), expire(sentSession))
      return Effect.flatMap(Http.httpError(response, "method" in message ? message.method : undefined), Effect.fail)
    })
  }

  const openGet: SessionChannel["openGet"] = (lastEventId) =>
    Effect.gen(function*() {
      const sentSession = session
      const response = yield* PostExchange.authorized(options.auth, url, (auth) =>
        Effect.flatMap(
          Http.assemble(options, { verb: "GET", url }, {
            accept: "text/event-stream",
            "mcp-session-id": sentSession,
            "mcp-protocol-version": versionHeader(),
            "last-event-id": lastEventId,
            ...auth
          }),
          (headers) => Http.execute(client, HttpClientRequest.get(url, { headers }), "GET")
        ), { method: "GET" })
      if (Http.isSuccess(response.status)) {
        const type = Http.mediaType(response)
        if (type === "text/event-stream") return response
        const text = yield* Http.readText(response, 4096).pipe(Effect.orElseSucceed(() => ""))
        return yield* MalformedMessage.make(text, `expected text/event-stream from GET, got "${type}"`)
      }
      if (response.status === 404 && sentSession !== undefined) {
        yield* Http.discard(response)
        return yield* expire(sentSession)
      }
      return yield* Effect.flatMap(Http.httpError(response, "GET"), Effect.fail)
    })

  const setProtocolVersion = (version: string): boolean => {
    protocolVersion = version
    if (ProtocolVersion.eraOf(version) === "legacy") {
      stateless = undefined
      return false
    }
    if (stateless?.version !== version) stateless = StatelessHeaders.make(version)
    session = undefined
    expiredSession = undefined
    return true
  }

  const endSession = Effect.suspend(() =>
    session === undefined || session === expiredSession
      ? Effect.void
      : PostExchange.deleteSession(
        endpoint,
        { "mcp-session-id": session, "mcp-protocol-version": versionHeader() },
        options.closeTimeout
      )
  )

  return {
    stateless: () => stateless,
    session: () => session,
    protocolVersion: () => protocolVersion,
    setProtocolVersion,
    post,
    openGet,
    markReady,
    adoptSession,
    endSession
  }
}
