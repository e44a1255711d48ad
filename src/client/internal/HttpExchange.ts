/**
 * Small pieces shared by the HTTP client transports: sending with the
 * redirect policy, header assembly, bounded body reads, and the mapping of
 * HTTP outcomes to our typed errors.
 */
import * as Cause from "effect/Cause"
import type * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { Headers, HttpClient, HttpClientError, HttpClientResponse } from "effect/http"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import type * as JsonRpc from "../../JsonRpc.ts"
import { HttpError, MessageTooLarge, RedirectRefused, TransportClosed, truncate } from "../../McpError.ts"
import * as UnavailableRetry from "./UnavailableRetry.ts"

export type HttpVerb = "POST" | "GET" | "DELETE"

/**
 * What the per-request header hook is told about the request it decorates.
 *
 * @since 0.1.0
 * @category models
 */
export interface HeaderContext {
  readonly verb: HttpVerb
  readonly url: string
  /** The JSON-RPC message in the body (POST only). */
  readonly message?: JsonRpc.JsonRpcMessage | undefined
}

/**
 * Computes extra headers per HTTP request, e.g. a bearer token that refreshes.
 * It runs before every POST, GET and DELETE the transport makes.
 *
 * @since 0.1.0
 * @category models
 */
export type HeaderHook = (context: HeaderContext) => Effect.Effect<Readonly<Record<string, string>>>

export interface HeaderSource {
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly requestHeaders?: HeaderHook | undefined
}

/** What both HTTP client transports are configured with. */
export interface TransportOptions extends HeaderSource {
  readonly url: string | URL
  /** Per-request timeout unless the call says otherwise. Default 30 seconds. */
  readonly defaultTimeout?: Duration.Input | undefined
  /** Largest message sent or accepted (JSON body or SSE event). Default 10 MiB. */
  readonly maxMessageBytes?: number | undefined
  /** Per-subscriber buffer of notifications before the oldest are dropped. Default 1024. */
  readonly notificationBuffer?: number | undefined
  /**
   * How long an SSE stream may stay completely silent (no event, no keep-alive
   * comment) before it counts as dead. Default 5 minutes.
   */
  readonly sseIdleTimeout?: Duration.Input | undefined
  /**
   * A POST refused with 503 or 429 and a `Retry-After` is sent again after
   * that wait: a fleet's draining instance, a full server or one whose shared
   * store is down answer so before running anything. Default: two more
   * attempts, waits up to 5 seconds, not for `tools/call` (a server may refuse
   * after the tool ran). `false`: never. A request's timeout covers the waits.
   * The GETs that open a stream (the legacy transport's, within its connect
   * timeout) and resume one wait such a refusal out as well.
   */
  readonly retryUnavailable?: UnavailableRetry.RetryUnavailableOptions | false | undefined
}

export const DEFAULT_SSE_IDLE = Duration.minutes(5)
/** Replies to server requests and cancellations run in the background, bounded by this. */
export const BACKGROUND_SEND_TIMEOUT = Duration.seconds(10)

/** Milliseconds of an optional duration; `undefined` when it is infinite (no limit). */
export const millis = (input: Duration.Input | undefined, fallback: Duration.Duration): number | undefined => {
  const d = input === undefined ? fallback : Duration.fromInputUnsafe(input)
  return Duration.isFinite(d) ? Duration.toMillis(d) : undefined
}

const lowerKeysInto = (record: Readonly<Record<string, string>> | undefined, into: Record<string, string>) => {
  if (record === undefined) return
  for (const key of Object.keys(record)) into[key.toLowerCase()] = record[key]!
}

/** A record of headers with its names lower-cased. */
export const lowerKeys = (record: Readonly<Record<string, string>> | undefined): Record<string, string> => {
  const out: Record<string, string> = {}
  lowerKeysInto(record, out)
  return out
}

/** User headers (static, then the hook), overridden by the transport's own. */
export const assemble = (
  source: HeaderSource,
  context: HeaderContext,
  own: Readonly<Record<string, string | undefined>>
): Effect.Effect<Record<string, string>> =>
  Effect.suspend(() => {
    const merge = (hooked: Readonly<Record<string, string>> | undefined) => {
      const out: Record<string, string> = {}
      lowerKeysInto(source.headers, out)
      lowerKeysInto(hooked, out)
      for (const key of Object.keys(own)) {
        const value = own[key]
        if (value !== undefined) out[key] = value
      }
      return out
    }
    return source.requestHeaders === undefined
      ? Effect.succeed(merge(undefined))
      : Effect.map(source.requestHeaders(context), merge)
  })

const headersRead = new WeakMap<HttpClientResponse.HttpClientResponse, Headers.Headers>()

/**
 * The headers of a response, built once: the Node clients build a fresh
 * record from the raw headers on every read of `response.headers`, and an
 * answer's are read several times (status handling, redirects, media type,
 * length).
 */
export const headersOf = (response: HttpClientResponse.HttpClientResponse): Headers.Headers => {
  let headers = headersRead.get(response)
  if (headers === undefined) {
    headers = response.headers
    headersRead.set(response, headers)
  }
  return headers
}

/** The media type of a response without parameters, lower-cased ("" when absent). */
export const mediaType = (response: HttpClientResponse.HttpClientResponse): string => {
  const raw = headersOf(response)["content-type"]
  if (raw === undefined) return ""
  const semi = raw.indexOf(";")
  return (semi === -1 ? raw : raw.slice(0, semi)).trim().toLowerCase()
}

export const isSuccess = (status: number): boolean => status >= 200 && status < 300

/** Redirects followed for one HTTP request; one more fails it with `RedirectRefused`. */
export const MAX_REDIRECTS = 5

const isRedirect = (status: number): boolean =>
  status === 301 || status === 302 || status === 303 || status === 307 || status === 308

/**
 * How `execute` sends a request again when the answer is a refusal for now
 * (503 or 429 with a `Retry-After` the policy waits for): `again` builds the
 * request anew (its headers too) with one attempt fewer. Given only while
 * attempts are left.
 */
interface Resend {
  readonly policy: UnavailableRetry.Policy
  readonly again: () => Effect.Effect<HttpClientResponse.HttpClientResponse, TransportClosed | RedirectRefused>
}

/** The refusal read away, the wait it asks for, and the request again; or the refusal, for the caller to read. */
const resendAfter = (
  response: HttpClientResponse.HttpClientResponse,
  method: string | undefined,
  resend: Resend
): Effect.Effect<HttpClientResponse.HttpClientResponse, TransportClosed | RedirectRefused> =>
  Effect.clockWith((clock) => {
    const asked = UnavailableRetry.retryAfterMs(response.headers["retry-after"], clock.currentTimeMillisUnsafe())
    const delay = UnavailableRetry.delayFor(resend.policy, method, response.status, asked)
    if (delay === undefined) return Effect.succeed(response)
    return Effect.logDebug(`MCP HTTP: ${response.status} for ${method ?? "a reply"}, sending again in ${delay} ms`).pipe(
      Effect.andThen(discard(response)),
      Effect.andThen(Effect.sleep(delay)),
      Effect.andThen(Effect.suspend(resend.again))
    )
  })

/**
 * `execute` for a request built from `headers`, which are evaluated anew
 * (the header hook, the token) for each attempt: a refusal for now that
 * `policy` waits for is sent again after the wait, as long as attempts are
 * left; `undefined`: never.
 */
export const executeResending = (
  client: HttpClient.HttpClient,
  headers: Effect.Effect<Record<string, string>>,
  request: (headers: Record<string, string>) => HttpClientRequest.HttpClientRequest,
  method: string | undefined,
  policy: UnavailableRetry.Policy | undefined
): Effect.Effect<HttpClientResponse.HttpClientResponse, TransportClosed | RedirectRefused> => {
  const attempt = (left: number): Effect.Effect<HttpClientResponse.HttpClientResponse, TransportClosed | RedirectRefused> =>
    Effect.flatMap(headers, (built) =>
      execute(
        client,
        request(built),
        method,
        policy === undefined || left <= 0 ? undefined : { policy, again: () => attempt(left - 1) }
      ))
  return attempt(policy?.attempts ?? 0)
}

/**
 * Sends one HTTP request and returns its answer, whatever the status, after
 * following the redirects an MCP exchange survives. 307 and 308 keep the
 * method and the body, so they are followed for every verb; 301, 302 and
 * 303 would turn a POST (or, for 303, a DELETE) into a bodiless GET, so they
 * are followed for GET only. Every hop must stay on the origin of the first
 * URL: the request carries the session id and the user's headers
 * (credentials among them). Anything else, and a hop past `MAX_REDIRECTS`,
 * fails with `RedirectRefused`; a 3xx without `Location` is returned as it
 * is. `fetch` is told not to follow redirects itself, so that the policy is
 * the same whichever `HttpClient` runs the request.
 */
export const execute = (
  client: HttpClient.HttpClient,
  request: HttpClientRequest.HttpClientRequest,
  method?: string,
  resend?: Resend
): Effect.Effect<HttpClientResponse.HttpClientResponse, TransportClosed | RedirectRefused> => {
  const verb = request.method
  const send = (current: HttpClientRequest.HttpClientRequest) =>
    manualRedirects(client.execute(current)).pipe(
      Effect.catchTag("HttpClientError", (error) =>
        error.response !== undefined ? Effect.succeed(error.response) : Effect.fail(requestFailed(error, verb)))
    )
  const hop = (
    current: HttpClientRequest.HttpClientRequest,
    hops: number
  ): Effect.Effect<HttpClientResponse.HttpClientResponse, TransportClosed | RedirectRefused> =>
    Effect.flatMap(send(current), (response) => {
      const location = headersOf(response)["location"]
      if (!isRedirect(response.status) || location === undefined) {
        return resend === undefined || isSuccess(response.status)
          ? Effect.succeed(response)
          : resendAfter(response, method, resend)
      }
      const refuse = (target: string, reason: string) =>
        Effect.andThen(
          discard(response),
          Effect.fail(
            new RedirectRefused({ status: response.status, location: target, url: current.url, method, reason })
          )
        )
      let target: URL
      try {
        target = new URL(location, current.url)
      } catch {
        return refuse(location, "the Location is not a URL")
      }
      target.hash = ""
      if (target.origin !== new URL(request.url).origin) return refuse(target.href, "another origin")
      if (response.status < 307 && verb !== "GET") {
        const reason = `a ${response.status} would turn the ${verb} into a GET; only 307 and 308 are followed`
        return refuse(target.href, reason)
      }
      if (hops >= MAX_REDIRECTS) return refuse(target.href, `more than ${MAX_REDIRECTS} redirects`)
      return Effect.andThen(discard(response), hop(HttpClientRequest.setUrl(current, target.href), hops + 1))
    })
  return hop(request, 0)
}

const MANUAL: RequestInit = { redirect: "manual" }

/**
 * Runs `effect` with its fiber's context changed by `patch`, a pure function
 * of that context. Every request of one caller runs in the same context (or
 * in fibers forked from it, which share it), so the patched context is kept
 * per context seen, weakly: a request pays a lookup instead of rebuilding the
 * context (a copy of it once it is deep), and a context no longer in use is
 * not kept alive by it.
 */
export const withPatchedContext = (
  patch: (context: Context.Context<never>) => Context.Context<never>
) => {
  const patched = new WeakMap<Context.Context<never>, Context.Context<never>>()
  const remembered = (context: Context.Context<never>): Context.Context<never> => {
    let next = patched.get(context)
    if (next === undefined) {
      next = patch(context)
      patched.set(context, next)
    }
    return next
  }
  return <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.updateContext(effect, remembered as unknown as (context: Context.Context<R>) => Context.Context<R>)
}

/** Makes a fetch-based client return 3xx answers instead of following them (the Node clients do not follow them). */
const manualRedirects = withPatchedContext((context) => {
  const init = Context.getOption(context, FetchHttpClient.RequestInit)
  return Context.add(context, FetchHttpClient.RequestInit, Option.isNone(init) ? MANUAL : { ...init.value, redirect: "manual" })
})

/** A failure below HTTP (refused, reset, DNS): the request never got an answer. */
export const requestFailed = (error: HttpClientError.HttpClientError, what: string): TransportClosed =>
  new TransportClosed({ reason: `${what} failed: ${describe(error)}`, cause: error })

const describe = (error: HttpClientError.HttpClientError): string => {
  const cause = (error.reason as { cause?: unknown }).cause
  if (cause instanceof Error) {
    const inner = (cause as { cause?: unknown }).cause
    return inner instanceof Error ? `${cause.message} (${inner.message})` : cause.message
  }
  return error.reason._tag
}

/** The body length the server declared, when it declared one. */
export const declaredLength = (response: HttpClientResponse.HttpClientResponse): number | undefined => {
  const header = headersOf(response)["content-length"]
  if (header === undefined || header === "") return undefined
  const declared = Number(header)
  return Number.isFinite(declared) ? declared : undefined
}

/** Reads the whole body as text, failing once it grows past `maxBytes`. */
export const readText = (
  response: HttpClientResponse.HttpClientResponse,
  maxBytes: number
): Effect.Effect<string, MessageTooLarge | TransportClosed> =>
  Effect.suspend(() => {
    const declared = declaredLength(response)
    if (declared !== undefined && declared > maxBytes) {
      return Effect.andThen(
        discard(response),
        Effect.fail(new MessageTooLarge({ limit: maxBytes, size: declared, direction: "incoming" }))
      )
    }
    // With a declared length within the limit, read the body whole: reading `stream` instead makes the
    // HTTP client abort its AbortController when the stream ends, which costs a DOMException per response.
    // Without a length (chunked), the streamed read below enforces the limit as bytes arrive.
    if (declared !== undefined) {
      return response.arrayBuffer.pipe(
        Effect.map((buffer) => new TextDecoder().decode(buffer)),
        Effect.catchTag("HttpClientError", (error) => Effect.fail(requestFailed(error, "reading the response body")))
      )
    }
    const decoder = new TextDecoder()
    let size = 0
    let text = ""
    return response.stream.pipe(
      Stream.runForEach((chunk) => {
        size += chunk.length
        if (size > maxBytes) return Effect.fail(new MessageTooLarge({ limit: maxBytes, size, direction: "incoming" }))
        text += decoder.decode(chunk, { stream: true })
        return Effect.void
      }),
      Effect.map(() => text + decoder.decode()),
      Effect.catchTag("HttpClientError", (error) => Effect.fail(requestFailed(error, "reading the response body")))
    )
  })

const ERROR_BODY_LIMIT = 64 * 1024

/** Turns a non-2xx response into `HttpError`, keeping the body text and the auth hints. */
export const httpError = (
  response: HttpClientResponse.HttpClientResponse,
  method?: string
): Effect.Effect<HttpError> =>
  readText(response, ERROR_BODY_LIMIT).pipe(
    Effect.orElseSucceed(() => ""),
    Effect.flatMap((body) => Effect.clockWith((clock) => Effect.succeed(refusal(response, body, method, clock))))
  )

/** The `HttpError` of a non-2xx `response` whose body (read up to a bound) is `body`. */
export const refusal = (
  response: HttpClientResponse.HttpClientResponse,
  body: string,
  method: string | undefined,
  clock: Clock.Clock
): HttpError =>
  new HttpError({
    status: response.status,
    body: truncate(body.trim()),
    method,
    wwwAuthenticate: response.headers["www-authenticate"],
    mcpAuthServer: response.headers["mcp-auth-server"],
    retryAfterMs: UnavailableRetry.retryAfterMs(response.headers["retry-after"], clock.currentTimeMillisUnsafe())
  })

/** Reads and drops a body nobody needs (202 answers), so the connection can be reused. */
export const discard = (response: HttpClientResponse.HttpClientResponse): Effect.Effect<void> => {
  const declared = declaredLength(response)
  // A small declared body is read whole (no abort per response, see readText); anything else is streamed away.
  const drain = declared !== undefined && declared <= DISCARD_WHOLE_LIMIT
    ? response.arrayBuffer
    : Stream.runDrain(response.stream)
  return drain.pipe(Effect.timeoutOption("2 seconds"), Effect.ignore)
}

const DISCARD_WHOLE_LIMIT = 64 * 1024

/** Session ids are visible ASCII (0x21–0x7E); anything else is not a usable header value. */
export const isValidSessionId = (id: string): boolean => /^[\x21-\x7e]+$/.test(id)

/**
 * Runs one exchange in a fiber the transport owns (`inflight`), so that
 * closing the transport's scope aborts it and the caller sees the
 * transport's `TransportClosed` (read through `closed`), while the caller's
 * own interruption still aborts it too.
 */
export const owned = (
  inflight: FiberSet.FiberSet<unknown, unknown>,
  closed: () => TransportClosed | undefined
) =>
<A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E | TransportClosed> =>
  Effect.suspend(() => {
    const before = closed()
    if (before !== undefined) return Effect.fail(before)
    return Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(FiberSet.run(inflight, effect), (fiber) =>
        restore(Fiber.await(fiber)).pipe(
          Effect.onInterrupt(() => Fiber.interrupt(fiber)),
          Effect.flatMap((exit): Effect.Effect<A, E | TransportClosed> => {
            if (Exit.isSuccess(exit)) return Effect.succeed(exit.value)
            const after = closed()
            if (after !== undefined && Cause.hasInterruptsOnly(exit.cause)) return Effect.fail(after)
            return Effect.failCause(exit.cause)
          })
        ))
    )
  })
