/**
 * One MCP request on a Streamable HTTP endpoint, with no client to set up
 * and nothing left open: for scripts and serverless functions that call one
 * tool and are done.
 *
 * The stateless revision (2026-07-28) needs a single POST: the request
 * carries its own `_meta` (version, capabilities, client info) and the
 * routing headers. A server of the session era (2025-03-26 … 2025-11-25)
 * needs the handshake: `initialize`, `notifications/initialized`, the
 * request, and a DELETE that ends the session however the call ends. With
 * `protocol: "auto"` (the default) the stateless request goes first and the
 * session era is used only when the server's refusal says it does not speak
 * the stateless one; what was learnt is kept per origin for the next call.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Services from "effect/Context"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import { constTrue } from "effect/Function"
import * as HttpClient from "effect/http/HttpClient"
import { DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_REQUEST_TIMEOUT_MS } from "../Defaults.ts"
import type { Implementation } from "../Implementation.ts"
import { type HttpError, InvalidPayload, RequestTimeout, truncate } from "../McpError.ts"
import { group, type McpAuthError, McpProtocolError, type McpServerError, type McpTransportError } from "../McpErrorGroup.ts"
import * as ProtocolVersion from "../ProtocolVersion.ts"
import type { OAuthProviderShape } from "./auth/OAuthProvider.ts"
import * as ClientSpans from "./internal/ClientSpans.ts"
import type * as Http from "./internal/HttpExchange.ts"
import { isNeutralStatus } from "./internal/NeutralStatus.ts"
import type * as OneShotHandshake from "./internal/OneShotHandshake.ts"
import { type CallContext, Drains, type ExchangeError } from "./internal/OneShotExchange.ts"
import { CurrentEras, RequestIds } from "./internal/OneShotShared.ts"
import * as Stateless from "./internal/OneShotStateless.ts"
import * as PostExchange from "./internal/PostExchange.ts"
import type * as UnavailableRetry from "./internal/UnavailableRetry.ts"
import * as Negotiation from "./Negotiation.ts"

export {
  CurrentEras,
  forgetServers,
  makeRequestIds,
  RequestIds,
  type RequestIdSource
} from "./internal/OneShotShared.ts"

// ---------------------------------------------------------------------------
// Options and errors

/**
 * How a one-shot call is made. Redirects follow the transports' policy:
 * 307 and 308 on the same origin, at most 5; anything else fails with
 * `RedirectRefused`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * The revision to speak: `"auto"` (default) tries the newest stateless
   * revision and falls back to the session era when the server does not
   * speak it; a stateless revision (`"2026-07-28"`, or a later date) sends
   * that request only; a session-era revision (`"2025-11-25"`, …) runs the
   * handshake with it.
   */
  readonly protocol?: "auto" | ProtocolVersion.AnyVersion | (string & {}) | undefined
  /**
   * Bound on the whole call: handshake, request, retries, and a sign-in
   * with `auth`. A session opened on the way is still ended after it,
   * within `closeTimeout`. Default 30 seconds.
   */
  readonly timeout?: Duration.Input | undefined
  /** Extra headers on every HTTP request of the call, e.g. `Authorization`. Default none. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** Headers computed per HTTP request (a refreshing token), applied over `headers`. Default none. */
  readonly requestHeaders?: Http.HeaderHook | undefined
  /** Who the client says it is. Default `{ name: "effect-mcp-transport", version: "0.1.0" }`. */
  readonly clientInfo?: Implementation | undefined
  /** The capabilities the request declares. Default `{}` (none). */
  readonly clientCapabilities?: Readonly<Record<string, unknown>> | undefined
  /** Largest message sent or accepted (JSON body or SSE event). Default 10 MiB. */
  readonly maxMessageBytes?: number | undefined
  /** Bound on the DELETE that ends a session-era session. Default 2 seconds. */
  readonly closeTimeout?: Duration.Input | undefined
  /**
   * The tool's `inputSchema`, for `tools/call` on the stateless revision:
   * the arguments its `x-mcp-header` properties name are sent as
   * `Mcp-Param-*` headers too. Without it, a server that needs them refuses
   * the call (`-32020`) and the schema is looked up with `tools/list`
   * before one retry. Default none.
   */
  readonly inputSchema?: unknown
  /**
   * OAuth 2.1 for a server behind the MCP authorization spec: every HTTP
   * request of the call carries the provider's bearer token, in either era;
   * a 401 runs discovery and sign-in (or a refresh) and sends the request
   * once more, a 403 `insufficient_scope` steps up. Keep one provider
   * across calls to reuse its tokens. Default none: a 401 fails as
   * `HttpError` with the server's hints.
   */
  readonly auth?: OAuthProviderShape | undefined
  /**
   * A request refused with 503 or 429 and a `Retry-After` is sent again
   * after that wait, as by the HTTP transports: by default twice more, for
   * waits up to 5 seconds, never for `tools/call` unless `toolCalls: true`.
   * `false` turns it off. The call's `timeout` covers the waits.
   */
  readonly retryUnavailable?: UnavailableRetry.RetryUnavailableOptions | false | undefined
}

/**
 * The server needs more input before it can answer (`resultType:
 * "input_required"`): sampling, elicitation or roots, in rounds a one-shot
 * call does not run. `McpClient` runs them.
 *
 * @since 0.1.0
 * @category errors
 */
export class InputRequired extends Data.TaggedError("InputRequired")<{
  readonly method: string
  /** What the server asked for, as it sent it. */
  readonly inputRequests: unknown
}> {
  override get message(): string {
    return `${this.method} needs input rounds (resultType "input_required"), which a one-shot call does not run: use McpClient`
  }
}

/**
 * A result whose `resultType` is neither `complete` nor `input_required`.
 *
 * @since 0.1.0
 * @category errors
 */
export class UnknownResultType extends Data.TaggedError("UnknownResultType")<{
  readonly method: string
  readonly resultType: unknown
}> {
  override get message(): string {
    return `${this.method} answered with an unknown resultType ${truncate(JSON.stringify(this.resultType) ?? "", 80)}`
  }
}

/**
 * What a one-shot call can fail with: the groups of `McpErrorGroup` (as
 * `McpClient`'s calls), and this module's own `InputRequired` and
 * `UnknownResultType`.
 *
 * @since 0.1.0
 * @category models
 */
export type OneShotError =
  | McpTransportError
  | McpServerError
  | McpProtocolError
  | McpAuthError
  | InputRequired
  | UnknownResultType

/** The failures inside the module, before they are grouped. */
type FlatOneShotError = ExchangeError | InputRequired | UnknownResultType

/**
 * The result of `tools/call`: content blocks, and structured content when
 * the tool has an output schema. Fields the server adds are kept.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolResult {
  readonly content: ReadonlyArray<{ readonly type: string; readonly [key: string]: unknown }>
  readonly structuredContent?: unknown
  readonly isError?: boolean | undefined
  readonly [key: string]: unknown
}

// ---------------------------------------------------------------------------
// The fallback decision

/**
 * What a refused stateless request says about the server: `Fallback` (it
 * speaks only the session era: run the handshake), `RetryWith` (a stateless
 * server that named another stateless revision we speak), or `Stay` (a
 * stateless server's error, or a refusal that says nothing about the
 * revision: report it).
 *
 * @since 0.1.0
 * @category models
 */
export type FallbackDecision = Stateless.FallbackDecision

/**
 * Decides, from the HTTP answer to a stateless request that was not 2xx,
 * whether the server is of the session era. Only a 4xx other than 401 and
 * 403 can say so, and only when its body is not a stateless server's error
 * (`-32020`, `-32021`, `-32022`, or `-32601` on a 404: a stateless server
 * without that method). A `-32022` that names another stateless revision we
 * speak asks for a retry with it; one that names only session-era
 * revisions we speak is a fallback. Timeouts and network failures never get
 * here: they are no answer at all.
 *
 * @example
 * ```ts
 * import * as OneShot from "effect-mcp-transport/client/OneShot"
 *
 * OneShot.decideFallback({ status: 404, body: "Not Found" }, "2026-07-28") // { _tag: "Fallback" }
 * OneShot.decideFallback({ status: 401, body: "" }, "2026-07-28") // { _tag: "Stay" }
 * ```
 *
 * @since 0.1.0
 * @category utils
 */
export const decideFallback: (
  answer: { readonly status: number; readonly body: string },
  requested: string
) => FallbackDecision = Stateless.decideFallback

// ---------------------------------------------------------------------------
// One call

const DEFAULT_CLIENT_INFO: Implementation = { name: "effect-mcp-transport", version: "0.1.0" }
const EMPTY_CAPABILITIES: Readonly<Record<string, unknown>> = {}
const DEFAULT_CLOSE_TIMEOUT = Duration.seconds(2)
const DEFAULT_TIMEOUT = Duration.millis(DEFAULT_REQUEST_TIMEOUT_MS)

/** A result of the stateless revision: complete (or without `resultType`), or a typed error. */
const completeResult = (
  result: unknown,
  method: string
): Effect.Effect<unknown, InputRequired | UnknownResultType> => {
  const resultType = typeof result === "object" && result !== null
    ? (result as { resultType?: unknown }).resultType
    : undefined
  if (resultType === undefined || resultType === "complete") return Effect.succeed(result)
  if (resultType === "input_required") {
    return Effect.fail(new InputRequired({ method, inputRequests: (result as { inputRequests?: unknown }).inputRequests }))
  }
  return Effect.fail(new UnknownResultType({ method, resultType }))
}

// ---------------------------------------------------------------------------
// Choosing the era

let handshakeModule: typeof OneShotHandshake | undefined

/** The session era's handshake, loaded by the first call that needs it. */
const handshake: Effect.Effect<typeof OneShotHandshake> = Effect.suspend(() =>
  handshakeModule !== undefined
    ? Effect.succeed(handshakeModule)
    : Effect.promise(() => import("./internal/OneShotHandshake.ts")).pipe(
      Effect.tap((module) => Effect.sync(() => handshakeModule = module))
    )
)

const refusedError = (error: OneShotHandshake.InitializeRefused): HttpError => error.answer.error

const legacyOnly = (context: CallContext, origin: string, version: string, method: string, params: unknown, auto: boolean) =>
  Effect.flatMap(handshake, (module) =>
    module.call(context, origin, version, method, params, auto).pipe(
      Effect.catchTag("InitializeRefused", (refused) => Effect.fail(refusedError(refused)))
    ))

const run = (
  context: CallContext,
  origin: string,
  protocol: string,
  method: string,
  params: unknown,
  schema: unknown
): Effect.Effect<unknown, FlatOneShotError> => {
  if (protocol !== "auto") {
    return ProtocolVersion.eraOf(protocol) === "modern"
      ? Stateless.call(context, origin, protocol, method, params, schema, false, false).pipe(
        Effect.flatMap((result) => completeResult(result, method)),
        Effect.catchTag("FallBack", (refused) => Effect.fail(refused.error))
      )
      : legacyOnly(context, origin, protocol, method, params, false)
  }
  const known = Negotiation.get(context.eras, origin)
  const modernFirst = (version: string, fallback: boolean) =>
    Stateless.call(context, origin, version, method, params, schema, true, fallback).pipe(
      Effect.flatMap((result) => completeResult(result, method)),
      Effect.catchTag("FallBack", () => legacyOnly(context, origin, ProtocolVersion.LATEST, method, params, true))
    )
  if (known?.era === "legacy") {
    // The handshake checks the cached era: an initialize refused for another reason than a neutral status
    // means the server changed, so it is probed afresh, stateless first, without a second fallback.
    return Effect.flatMap(handshake, (module) =>
      module.call(context, origin, ProtocolVersion.LATEST, method, params, true).pipe(
        Effect.catchTag("InitializeRefused", (refused) => {
          const { status } = refused.answer
          if (status < 400 || status >= 500 || isNeutralStatus(status)) return Effect.fail(refusedError(refused))
          Negotiation.invalidate(context.eras, origin)
          return modernFirst(ProtocolVersion.LATEST_STATELESS, false)
        })
      ))
  }
  return modernFirst(known?.version ?? ProtocolVersion.LATEST_STATELESS, true)
}

// ---------------------------------------------------------------------------
// Public

const originOf = (url: string): string => {
  try {
    return new URL(url).origin
  } catch {
    return url
  }
}

/**
 * Calls one MCP method on a Streamable HTTP endpoint and returns its result.
 * A JSON-RPC error fails with `RpcError` (or the typed error of a
 * stateless-era code); see `Options` for the revision, timeout and headers.
 *
 * @example
 * ```ts
 * import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
 * import * as Effect from "effect/Effect"
 * import * as OneShot from "effect-mcp-transport/client/OneShot"
 *
 * const tools = OneShot.call("http://127.0.0.1:8421/mcp", "tools/list").pipe(
 *   Effect.provide(NodeHttpClient.layerUndici)
 * )
 * ```
 *
 * @since 0.1.0
 * @category calls
 */
export const call = (
  url: string | URL,
  method: string,
  params?: unknown,
  options?: Options
): Effect.Effect<unknown, OneShotError, HttpClient.HttpClient> =>
  Effect.contextWith((services: Services.Context<HttpClient.HttpClient>) => {
    const client = Services.get(services, HttpClient.HttpClient)
    const target = url.toString()
    const opts = options ?? {}
    const context: CallContext = {
      endpoint: PostExchange.endpoint(client, target, opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES, opts),
      clientInfo: opts.clientInfo ?? DEFAULT_CLIENT_INFO,
      capabilities: opts.clientCapabilities ?? EMPTY_CAPABILITIES,
      closeTimeout: opts.closeTimeout ?? DEFAULT_CLOSE_TIMEOUT,
      eras: Services.get(services, CurrentEras),
      ids: Services.get(services, RequestIds),
      drains: Services.get(services, Drains),
      current: { method, id: 0 }
    }
    const timeout = opts.timeout === undefined ? DEFAULT_TIMEOUT : Duration.fromInputUnsafe(opts.timeout)
    const running: Effect.Effect<unknown, FlatOneShotError> = ClientSpans.oneShot(
      target,
      method,
      params,
      run(context, originOf(target), opts.protocol ?? "auto", method, params, opts.inputSchema)
    ).pipe(
      // Nobody observes a span per HTTP request of a one-shot call; skipping it keeps the call cheap.
      Effect.provideService(HttpClient.TracerDisabledWhen, constTrue)
    )
    if (!Duration.isFinite(timeout)) return Effect.mapError(running, group)
    const timeoutMs = Duration.toMillis(timeout)
    return Effect.mapError(
      within(running, timeoutMs, () => new RequestTimeout({ method: context.current.method, id: context.current.id, timeoutMs })),
      group
    )
  })

/**
 * `effect`, failing with `onTimeout()` once `ms` have passed on the `Clock`
 * (a `TestClock` moves it). The call runs in a fiber of its own, which a
 * second fiber, asleep until then, interrupts. The interruption runs the
 * call's finalizers (a session's DELETE) before the timeout is reported.
 */
const within = <A, E, E2>(
  effect: Effect.Effect<A, E>,
  ms: number,
  onTimeout: () => E2
): Effect.Effect<A, E | E2> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Effect.forkChild(restore(effect), { startImmediately: true }), (fiber) => {
      let timedOut = false
      const expire = Effect.andThen(
        Effect.sleep(ms),
        Effect.sync(() => {
          timedOut = true
          fiber.interruptUnsafe()
        })
      )
      return Effect.flatMap(Effect.forkChild(expire, { startImmediately: true }), (timer) =>
        restore(Fiber.await(fiber)).pipe(
          Effect.onInterrupt(() => Effect.andThen(Fiber.interrupt(timer), Fiber.interrupt(fiber))),
          Effect.flatMap((exit): Effect.Effect<A, E | E2> => {
            timer.interruptUnsafe()
            if (Exit.isSuccess(exit)) return Effect.succeed(exit.value)
            if (timedOut && Cause.hasInterruptsOnly(exit.cause)) return Effect.fail(onTimeout())
            return Effect.failCause(exit.cause)
          })
        ))
    })
  )

const isToolResult = (u: unknown): u is ToolResult => {
  if (typeof u !== "object" || u === null) return false
  const content = (u as { content?: unknown }).content
  if (!Array.isArray(content)) return false
  for (const block of content) {
    if (typeof block !== "object" || block === null || typeof (block as { type?: unknown }).type !== "string") return false
  }
  return true
}

/**
 * Calls one tool (`tools/call`) and returns its result. A tool that failed
 * is a result with `isError: true`, not an error; a result without a
 * `content` array of typed blocks fails with `InvalidPayload`.
 *
 * @example
 * ```ts
 * import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
 * import * as Effect from "effect/Effect"
 * import * as OneShot from "effect-mcp-transport/client/OneShot"
 *
 * const weather = OneShot.callTool("http://127.0.0.1:8421/mcp", "get_weather", { city: "Oslo" }, {
 *   headers: { authorization: "Bearer secret" }
 * }).pipe(Effect.provide(NodeHttpClient.layerUndici))
 * ```
 *
 * @since 0.1.0
 * @category calls
 */
export const callTool = (
  url: string | URL,
  name: string,
  args?: Readonly<Record<string, unknown>>,
  options?: Options
): Effect.Effect<ToolResult, OneShotError, HttpClient.HttpClient> =>
  Effect.flatMap(
    call(url, "tools/call", args === undefined ? { name } : { name, arguments: args }, options),
    (result) =>
      isToolResult(result)
        ? Effect.succeed(result)
        : Effect.fail(
          new McpProtocolError({
            reason: new InvalidPayload({ method: "tools/call", kind: "result", reason: "content must be an array of blocks with a type" })
          })
        )
  )
