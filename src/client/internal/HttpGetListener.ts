/**
 * The standalone GET stream of a Streamable HTTP client: the server's
 * messages that answer no request, read in a loop that reconnects with
 * `Last-Event-ID` under the user's `Schedule`. Its state is its own: when it
 * gives up only the listener is marked failed, the POST channel keeps working.
 */
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberHandle from "effect/FiberHandle"
import * as Result from "effect/Result"
import type * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as SubscriptionRef from "effect/SubscriptionRef"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import type {
  HttpError,
  MalformedMessage,
  MessageTooLarge,
  RedirectRefused,
  SessionExpired,
  TransportClosed
} from "../../McpError.ts"
import type { AuthError } from "../../AuthError.ts"
import { ConnectionState, Diagnostic } from "../ClientTransport.ts"
import type * as ClientCore from "./ClientCore.ts"
import * as SseReader from "./SseReader.ts"
import * as SseReconnect from "./SseReconnect.ts"
import * as UnavailableRetry from "./UnavailableRetry.ts"

/** The standalone GET stream's own state, separate from the POST channel's. */
export type ListenerState = Data.TaggedEnum<{
  Idle: {}
  Connecting: { readonly attempt: number }
  Open: {}
  Reconnecting: { readonly attempt: number; readonly delayMs: number }
  /** The server answered 405: it offers no standalone stream. */
  Disabled: { readonly status: number }
  /** The retry budget ran out, or the session expired. */
  Failed: { readonly error: unknown }
}>
/** Constructors and matchers of `ListenerState`. */
export const ListenerState = Data.taggedEnum<ListenerState>()

/** Opens a GET SSE stream of the session, after `lastEventId` when given; anything but an SSE answer fails. */
export type OpenGet = (
  lastEventId: string | undefined
) => Effect.Effect<
  HttpClientResponse.HttpClientResponse,
  HttpError | RedirectRefused | SessionExpired | TransportClosed | MessageTooLarge | MalformedMessage | AuthError
>

const NOT_AUTH = new Set(["HttpError", "RedirectRefused", "SessionExpired", "TransportClosed", "MessageTooLarge", "MalformedMessage"])
const isAuthError = (error: { readonly _tag: string }): error is AuthError => !NOT_AUTH.has(error._tag)

/** What the listener is built from. */
export interface ListenerContext {
  readonly core: ClientCore.ClientCore
  readonly openGet: OpenGet
  /** Reconnect policy: its delays unless the server sent `retry:`, its end the retry budget. */
  readonly schedule: Schedule.Schedule<unknown, unknown>
  /** How an open stream is read: its limits, and where its messages go. */
  readonly events: SseReader.ReadOptions<never, never>
}

/** The listener of one transport. */
export interface HttpGetListener {
  readonly state: SubscriptionRef.SubscriptionRef<ListenerState>
  /** Starts the loop; does nothing while one is running. */
  readonly start: Effect.Effect<void>
  /** Interrupts the loop (the transport is closing). */
  readonly interrupt: Effect.Effect<void>
  /** After the close: a listener that was still running reads `Idle`. */
  readonly showClosed: Effect.Effect<void>
}

/** A listener in the scope of its transport, `Idle` until started. */
export const make = Effect.fnUntraced(function*(
  context: ListenerContext
): Effect.fn.Return<HttpGetListener, never, Scope.Scope> {
  const { core, events, openGet, schedule } = context
  const handle = yield* FiberHandle.make<void, never>()
  const state = yield* SubscriptionRef.make<ListenerState>(ListenerState.Idle())

  const setListener = (next: ListenerState) => SubscriptionRef.set(state, next)

  /** Leaves `Reconnecting` (the POST channel never stopped working). */
  const listenerSettled = SubscriptionRef.update(
    core.state,
    (current) => current._tag === "Reconnecting" ? ConnectionState.Ready() : current
  )

  const giveUp = (error: unknown) =>
    Effect.gen(function*() {
      yield* listenerSettled
      core.diagnose(Diagnostic.ListenerError({ error }))
      yield* setListener(ListenerState.Failed({ error }))
    })

  const loop: Effect.Effect<void> = Effect.gen(function*() {
    const cursor = SseReader.makeCursor()
    const backoff = yield* SseReconnect.make(schedule)
    while (true) {
      yield* setListener(ListenerState.Connecting({ attempt: backoff.attempts() }))
      cursor.bytes = 0
      let failure: unknown
      const opened = yield* Effect.result(openGet(cursor.lastEventId))
      if (Result.isFailure(opened)) {
        const error = opened.failure
        if (error._tag === "HttpError" && error.status === 405) {
          yield* listenerSettled
          return yield* setListener(ListenerState.Disabled({ status: 405 }))
        }
        // Authorization already had its one retry inside `openGet`: reconnecting would only ask again.
        if (error._tag === "SessionExpired" || isAuthError(error)) return yield* giveUp(error)
        failure = error
      } else {
        yield* listenerSettled
        yield* setListener(ListenerState.Open())
        failure = yield* SseReader.read(opened.success.stream, cursor, events).pipe(
          Effect.catch((error) => Effect.succeed({ _tag: "Broken" as const, cause: error }))
        )
        if (cursor.bytes > 0) yield* backoff.reset
      }
      // A refusal for now is waited out however long it asks: nobody waits on the listener.
      const delay = yield* backoff.next(failure, UnavailableRetry.askedWait(failure) ?? cursor.retryMs)
      if (delay === undefined) return yield* giveUp(failure)
      const attempt = backoff.attempts()
      yield* setListener(ListenerState.Reconnecting({ attempt, delayMs: delay }))
      yield* SubscriptionRef.update(core.state, (current) =>
        current._tag === "Ready" || current._tag === "Reconnecting"
          ? ConnectionState.Reconnecting({ attempt, delayMs: delay })
          : current)
      yield* Effect.sleep(Duration.millis(delay))
    }
  })

  return {
    state,
    start: FiberHandle.run(handle, loop, { onlyIfMissing: true }).pipe(Effect.asVoid),
    interrupt: FiberHandle.clear(handle),
    showClosed: Effect.flatMap(SubscriptionRef.get(state), (now) =>
      now._tag === "Open" || now._tag === "Connecting" || now._tag === "Reconnecting"
        ? setListener(ListenerState.Idle())
        : Effect.void)
  }
})
