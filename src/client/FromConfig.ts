/**
 * Transport selection from a server's configuration entry (the common `mcpServers` shape):
 * `type` omitted or `"stdio"` spawns a process, `"http"` speaks Streamable
 * HTTP, and `"sse"` tries Streamable HTTP first and falls back to the legacy
 * HTTP+SSE transport when the `initialize` POST is refused with a 4xx (the
 * spec's backward-compatibility probe). The choice is logged and readable as
 * `selected`.
 */
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import * as HttpClient from "effect/http/HttpClient"
import type { ChildProcessSpawner } from "effect/process"
import type { HttpError, RequestError, SpawnError } from "../McpError.ts"
import type { OAuthProviderShape } from "./auth/OAuthProvider.ts"
import * as Http from "./internal/HttpExchange.ts"
import { isNeutralStatus } from "./internal/NeutralStatus.ts"
import { ClientTransport, type ClientTransportShape, type ConnectionState, type RequestHandler } from "./ClientTransport.ts"
import * as SseClientTransport from "./SseClientTransport.ts"
import * as StdioClientTransport from "./StdioClientTransport.ts"
import * as StreamableHttpClientTransport from "./StreamableHttpClientTransport.ts"

/**
 * A server to spawn: the stdio client's configuration, with `type` omitted or `"stdio"`.
 *
 * @since 0.1.0
 * @category models
 */
export interface StdioServerConfig extends StdioClientTransport.StdioClientConfig {
  readonly type?: "stdio" | undefined
}

/**
 * A server at a URL: `type: "http"` speaks Streamable HTTP; `type: "sse"` tries Streamable
 * HTTP and falls back to legacy HTTP+SSE.
 *
 * @since 0.1.0
 * @category models
 */
export interface HttpServerConfig extends Http.HeaderSource {
  readonly type: "http" | "sse"
  readonly url: string
  /** Default request timeout (a number is milliseconds). Default 30 seconds. */
  readonly timeout?: Duration.Input | undefined
  readonly maxMessageBytes?: number | undefined
  /**
   * OAuth 2.1 for a server behind the MCP authorization spec, on whichever
   * transport carries the session (both share its tokens, kept for `url`).
   * Default none.
   */
  readonly auth?: OAuthProviderShape | undefined
  /** Further Streamable HTTP options (listener, reconnect schedule, idle timeout…). */
  readonly streamableHttp?: Partial<StreamableHttpClientTransport.Options> | undefined
  /** Further legacy HTTP+SSE options, used when `type: "sse"` falls back. */
  readonly sse?: Partial<SseClientTransport.Options> | undefined
}

/**
 * One entry of an `mcpServers` configuration.
 *
 * @example
 * ```ts
 * import type { McpServerConfig } from "effect-mcp-transport/client/FromConfig"
 *
 * const servers: Record<string, McpServerConfig> = {
 *   files: { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"] },
 *   remote: { type: "http", url: "https://example.com/mcp", headers: { authorization: "Bearer token" } }
 * }
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export type McpServerConfig = StdioServerConfig | HttpServerConfig

/**
 * The transport that carries a session.
 *
 * @since 0.1.0
 * @category models
 */
export type Selected = "stdio" | "streamable-http" | "sse"

/**
 * A client transport built from a configuration entry, which can say which transport it chose.
 *
 * @since 0.1.0
 * @category models
 */
export interface SelectedTransport extends ClientTransportShape {
  /**
   * Which transport carries the session. Immediate for `stdio` and `http`;
   * for `sse` it completes once `initialize` has been answered (or refused),
   * or with "streamable-http" if the transport closes before that.
   */
  readonly selected: Effect.Effect<Selected>
}

const isStdio = (config: McpServerConfig): config is StdioServerConfig =>
  config.type === undefined || config.type === "stdio"

/**
 * A refusal that means "no Streamable HTTP here". Authorization (401, 403,
 * 407), a timeout (408) and a rate limit (429) say nothing about the
 * transport and are reported as they are: a legacy attempt would hide them.
 */
const isLegacyProbe = (error: HttpError): boolean =>
  error.status >= 400 && error.status < 500 && !isNeutralStatus(error.status)

/** What either HTTP transport takes from the entry; its own options (`streamableHttp`, `sse`) go over it. */
const httpOptions = (config: HttpServerConfig) => ({
  url: config.url,
  headers: config.headers,
  requestHeaders: config.requestHeaders,
  defaultTimeout: config.timeout,
  maxMessageBytes: config.maxMessageBytes,
  auth: config.auth
})

const streamableOptions = (config: HttpServerConfig): StreamableHttpClientTransport.Options => ({
  ...httpOptions(config),
  ...config.streamableHttp
})

const sseOptions = (config: HttpServerConfig): SseClientTransport.Options => ({ ...httpOptions(config), ...config.sse })

/**
 * Streamable HTTP until `initialize` says otherwise. Requests before the
 * decision go to Streamable HTTP; the streams and the state follow whichever
 * transport ends up carrying the session.
 */
const probing = (config: HttpServerConfig) =>
  Effect.gen(function*() {
    const outer = yield* Effect.scope
    const client = yield* HttpClient.HttpClient
    const inner = yield* Scope.fork(outer)
    const streamable = yield* StreamableHttpClientTransport.make(streamableOptions(config)).pipe(Scope.provide(inner))
    const decided = yield* Deferred.make<Selected>()
    /** Some(legacy) on fallback; None once Streamable HTTP is confirmed or the transport closes. */
    const legacyChoice = yield* Deferred.make<Option.Option<SseClientTransport.SseClientTransport>>()
    let legacy: SseClientTransport.SseClientTransport | undefined
    let confirmed = false
    let handler: RequestHandler | undefined

    const current = (): ClientTransportShape => legacy ?? streamable

    const state = yield* SubscriptionRef.make<ConnectionState>(yield* SubscriptionRef.get(streamable.state))
    const mirror = (from: SubscriptionRef.SubscriptionRef<ConnectionState>) =>
      SubscriptionRef.changes(from).pipe(Stream.runForEach((s) => SubscriptionRef.set(state, s)))
    yield* mirror(streamable.state).pipe(
      Effect.raceFirst(Effect.flatMap(Deferred.await(legacyChoice), (o) => Option.isSome(o) ? Effect.void : Effect.never)),
      Effect.forkScoped
    )
    yield* Deferred.await(legacyChoice).pipe(
      Effect.flatMap(Option.match({ onNone: () => Effect.void, onSome: (t) => mirror(t.state) })),
      Effect.forkScoped
    )
    // Runs first on close: the transports close, their final state is copied, then the mirrors stop.
    yield* Effect.addFinalizer((exit) =>
      Effect.gen(function*() {
        yield* Scope.close(inner, exit)
        yield* SubscriptionRef.set(state, yield* SubscriptionRef.get(current().state))
        yield* Deferred.succeed(legacyChoice, Option.none())
        yield* Deferred.succeed(decided, "streamable-http")
      })
    )

    const confirm = Effect.suspend(() => {
      if (confirmed || legacy !== undefined) return Effect.void
      confirmed = true
      return Effect.andThen(
        Effect.all([Deferred.succeed(decided, "streamable-http"), Deferred.succeed(legacyChoice, Option.none())]),
        Effect.logInfo(`MCP: ${config.url} speaks Streamable HTTP`)
      )
    })

    const fallBack = (refusal: HttpError) =>
      SseClientTransport.make(sseOptions(config)).pipe(
        Scope.provide(inner),
        Effect.provideService(HttpClient.HttpClient, client),
        Effect.tapError((error) =>
          Effect.logInfo(`MCP: ${config.url} refused Streamable HTTP, and legacy HTTP+SSE failed too: ${error.message}`)
        ),
        // The first answer explains more than the second attempt's failure.
        Effect.mapError(() => refusal),
        Effect.tap((t) =>
          Effect.gen(function*() {
            legacy = t
            if (handler !== undefined) yield* t.setRequestHandler(handler)
            yield* Deferred.succeed(decided, "sse")
            yield* Deferred.succeed(legacyChoice, Option.some(t))
            yield* Effect.logInfo(`MCP: ${config.url} answered ${refusal.status} to Streamable HTTP; using legacy HTTP+SSE`)
          })
        )
      )

    const request: ClientTransportShape["request"] = (method, params, options) =>
      Effect.suspend(() => {
        if (legacy !== undefined || confirmed) return current().request(method, params, options)
        // Without a handshake to probe with (a raw transport user), any answer is proof enough.
        if (method !== "initialize") return Effect.tap(streamable.request(method, params, options), () => confirm)
        return streamable.request(method, params, options).pipe(
          Effect.tap(() => confirm),
          Effect.catchTag("HttpError", (error): Effect.Effect<unknown, RequestError> =>
            isLegacyProbe(error)
              ? Effect.flatMap(fallBack(error), (t) => t.request(method, params, options))
              : Effect.fail(error))
        )
      })

    // Subscribed to Streamable HTTP at once, so nothing it delivers during the probe is lost, and
    // then pulled directly rather than forwarded through a merging fiber: a notification must not be
    // overtaken by the response written after it (McpClient hands a call's progress over before its
    // result only if the progress got there first). The probe only ever falls back before
    // Streamable HTTP carried a session, so there is nothing to merge.
    const follow = <A>(pick: (t: ClientTransportShape) => Stream.Stream<A>): Stream.Stream<A> =>
      Stream.unwrap(Effect.gen(function*() {
        const early = yield* Stream.toPull(pick(streamable))
        const choice = yield* Deferred.await(legacyChoice)
        return Option.match(choice, { onNone: () => Stream.fromPull(Effect.succeed(early)), onSome: pick })
      }))

    const transport: SelectedTransport = {
      get kind() {
        return current().kind
      },
      request,
      notify: (method, params) => Effect.suspend(() => current().notify(method, params)),
      notifications: follow((t) => t.notifications),
      // Once the choice is made, its transport's own subscription; before, Streamable HTTP's,
      // handed over to the legacy transport on fallback (which happens before any session exists).
      subscribeNotifications: Effect.suspend(() => {
        if (legacy !== undefined) return legacy.subscribeNotifications
        if (confirmed) return streamable.subscribeNotifications
        return Effect.map(streamable.subscribeNotifications, (early) =>
          Stream.unwrap(Effect.map(
            Deferred.await(legacyChoice),
            Option.match({ onNone: () => early, onSome: (t) => t.notifications })
          )))
      }),
      diagnostics: follow((t) => t.diagnostics),
      stderr: Stream.empty,
      setRequestHandler: (h) =>
        Effect.suspend(() => {
          handler = h
          return Effect.andThen(streamable.setRequestHandler(h), legacy?.setRequestHandler(h) ?? Effect.void)
        }),
      setProtocolVersion: (v) => Effect.suspend(() => current().setProtocolVersion(v)),
      state,
      awaitClosed: Effect.raceFirst(
        Effect.suspend(() => legacy === undefined ? streamable.awaitClosed : Effect.never),
        Effect.flatMap(Deferred.await(legacyChoice), Option.match({ onNone: () => Effect.never, onSome: (t) => t.awaitClosed }))
      ),
      pendingCount: Effect.suspend(() => current().pendingCount),
      selected: Deferred.await(decided)
    }
    return transport
  })

const fixed = <T extends ClientTransportShape>(transport: T, selected: Selected): T & SelectedTransport =>
  Object.assign(transport, { selected: Effect.succeed(selected) })

/**
 * Builds the transport a configuration entry asks for.
 *
 * @since 0.1.0
 * @category constructors
 */
export function make(
  config: StdioServerConfig
): Effect.Effect<SelectedTransport, SpawnError, Scope.Scope | ChildProcessSpawner.ChildProcessSpawner>
export function make(
  config: HttpServerConfig
): Effect.Effect<SelectedTransport, never, Scope.Scope | HttpClient.HttpClient>
export function make(
  config: McpServerConfig
): Effect.Effect<
  SelectedTransport,
  SpawnError,
  Scope.Scope | ChildProcessSpawner.ChildProcessSpawner | HttpClient.HttpClient
>
export function make(
  config: McpServerConfig
): Effect.Effect<
  SelectedTransport,
  SpawnError,
  Scope.Scope | ChildProcessSpawner.ChildProcessSpawner | HttpClient.HttpClient
> {
  if (isStdio(config)) return Effect.map(StdioClientTransport.make(config), (t) => fixed(t, "stdio"))
  if (config.type === "http") {
    return Effect.map(StreamableHttpClientTransport.make(streamableOptions(config)), (t) => fixed(t, "streamable-http"))
  }
  return probing(config)
}

/**
 * `ClientTransport` for a configuration entry.
 *
 * @since 0.1.0
 * @category layers
 */
export function layer(
  config: StdioServerConfig
): Layer.Layer<ClientTransport, SpawnError, ChildProcessSpawner.ChildProcessSpawner>
export function layer(config: HttpServerConfig): Layer.Layer<ClientTransport, never, HttpClient.HttpClient>
export function layer(
  config: McpServerConfig
): Layer.Layer<ClientTransport, SpawnError, ChildProcessSpawner.ChildProcessSpawner | HttpClient.HttpClient>
export function layer(
  config: McpServerConfig
): Layer.Layer<ClientTransport, SpawnError, ChildProcessSpawner.ChildProcessSpawner | HttpClient.HttpClient> {
  return Layer.effect(ClientTransport, make(config))
}
