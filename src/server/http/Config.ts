/**
 * Options of the HTTP server transport and their defaults. The defaults are
 * the safe ones: loopback only, localhost origins and hosts, bounded bodies,
 * sessions and streams, idle sessions expire.
 */
import * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type { HttpRouter } from "effect/http"
import * as BatchLimit from "../../internal/BatchLimit.ts"
import * as ProtocolVersion from "../../ProtocolVersion.ts"
import type { EventStoreShape } from "../EventStore.ts"
import type * as ProtectedResource from "../auth/ProtectedResource.ts"
import type { Authenticate } from "./Security.ts"

/**
 * Options of the HTTP server transport (`layer`, `routes`, `make`): where it
 * listens, which endpoints it serves, who may call it and the limits it
 * enforces. Every option has a safe default.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Interface to bind (standalone `layer` only). Default `127.0.0.1`. */
  readonly host?: string | undefined
  /** Port to bind (standalone `layer` only); `0` picks a free one. Default `8421`. */
  readonly port?: number | undefined
  /**
   * Time a connection has to send a request's headers (standalone `layer`
   * only); past it the answer is 408 and the connection is closed. At most
   * `requestTimeout`; an infinite duration turns it off. Default 10 seconds.
   */
  readonly headersTimeout?: Duration.Input | undefined
  /**
   * Time a connection has to send a whole request, body included (standalone
   * `layer` only); past it the answer is 408 and the connection is closed. A
   * response stream is not bound by it; an infinite duration turns it off.
   * Default 30 seconds.
   */
  readonly requestTimeout?: Duration.Input | undefined
  /** How long a keep-alive connection may stay idle between requests (standalone `layer` only). Default 5 seconds. */
  readonly keepAliveTimeout?: Duration.Input | undefined
  /** Connections open at once (standalone `layer` only); further ones are closed on arrival. Default 2000. */
  readonly maxConnections?: number | undefined
  /** The Streamable HTTP endpoint (POST, GET, DELETE). Default `/mcp`. */
  readonly path?: HttpRouter.PathInput | undefined
  /** `stateful` issues session ids; `stateless` serves every POST on its own and answers GET and DELETE with 405. Default `stateful`. */
  readonly mode?: "stateful" | "stateless" | undefined
  /**
   * `auto` answers a request with JSON unless the handler sends something
   * while it works (then the answer becomes an SSE stream); `sse` always
   * streams. Default `auto`.
   */
  readonly responseMode?: "auto" | "sse" | undefined
  /**
   * Stateful mode: what a POST without `Mcp-Session-Id` that is not
   * `initialize` gets. `reject` is the spec's 400; `serve` answers it
   * without a session, for plain JSON clients of `POST /mcp`. Default `reject`.
   */
  readonly sessionlessPost?: "reject" | "serve" | undefined
  /** Whether GET opens the session's standalone SSE stream (else 405). Default `true`. */
  readonly standaloneStream?: boolean | undefined
  /**
   * Which protocol eras the endpoint serves. `both`: a POST whose
   * `MCP-Protocol-Version` names a stateless revision (2026-07-28 on) is
   * served on its own, without a session, when the handler serves that era
   * (`McpServer` with `stateless: true`); everything else (`initialize`, a
   * session id, an older or absent version header) goes to the sessions.
   * `modern`: stateless requests only; GET and DELETE answer 405, session
   * ids and `Last-Event-ID` are ignored, the legacy HTTP+SSE endpoints are
   * off unless `legacySse` says otherwise. `legacy`: the handshake era only.
   * Default `both`.
   */
  readonly eras?: "both" | "modern" | "legacy" | undefined
  /** Revisions accepted in `MCP-Protocol-Version`. Default: every revision this runtime speaks. */
  readonly protocolVersions?: ReadonlyArray<string> | undefined
  /** The `GET /mcp/events` broadcast stream and `GET /mcp/health`. Default `true`. */
  readonly eventsAndHealth?: boolean | undefined
  readonly eventsPath?: HttpRouter.PathInput | undefined
  readonly healthPath?: HttpRouter.PathInput | undefined
  /**
   * A Prometheus scrape endpoint: `GET /metrics` (or `path`) answers every
   * Effect metric of the server's registry in the text exposition format
   * (this runtime's `mcp.*` metrics, and the application's), names prefixed
   * with `prefix` when given, and the runtime's metrics are recorded for
   * this server (`Metrics.Enabled`). Not authenticated, like the health
   * probe; Host and Origin are checked. Default off.
   */
  readonly metrics?: boolean | { readonly path?: HttpRouter.PathInput | undefined; readonly prefix?: string | undefined } | undefined
  /** The 2024-11-05 HTTP+SSE endpoints. Default `true` (`false` with `eras: "modern"`). */
  readonly legacySse?: boolean | undefined
  readonly legacySsePath?: HttpRouter.PathInput | undefined
  readonly legacyMessagesPath?: HttpRouter.PathInput | undefined
  /**
   * Answer unknown routes with 404 and a JSON-RPC -32600 body, and OPTIONS
   * anywhere with 204. Default `true` for the standalone `layer`, `false`
   * for `routes` (the host application owns its other routes).
   */
  readonly notFound?: boolean | undefined
  /**
   * `Host` values accepted (`name` for any port, or `name:port`); `"any"`
   * turns the check off. Default: `localhost`, `127.0.0.1`, `[::1]` and the
   * bound address when it is a specific one.
   */
  readonly allowedHosts?: ReadonlyArray<string> | "any" | undefined
  /**
   * Browser origins accepted (`scheme://host[:port]`; without a port, any
   * port); `"any"` accepts all. Requests without `Origin` always pass.
   * Default: the server's own localhost origins.
   */
  readonly allowedOrigins?: ReadonlyArray<string> | "any" | undefined
  /** Authentication hook: the principal, or `Unauthorized` (401 with `WWW-Authenticate`). Default: none. */
  readonly authenticate?: Authenticate | undefined
  /**
   * The endpoint as an OAuth 2.1 protected resource (MCP authorization):
   * serves Protected Resource Metadata, requires a bearer token the
   * verifier accepts on every endpoint but the health probe, and the scopes
   * each request needs. Takes the place of `authenticate`. Default: none.
   */
  readonly authorization?: ProtectedResource.Options | undefined
  /** Request body limit in bytes, enforced while reading. Default 10 MiB. */
  readonly maxBodyBytes?: number | undefined
  /**
   * Sessions open at once (Streamable HTTP and legacy together). At the cap
   * the least recently used idle session is ended to make room; only when
   * every session is busy is a new one refused (503). Default 1000.
   */
  readonly maxSessions?: number | undefined
  /**
   * Sessions one principal (named by `authenticate`) may hold at once; at it,
   * the principal's own least recently used idle session makes room, and
   * when all of them are busy the new one gets 429. `"none"`: no cap.
   * Default: a tenth of `maxSessions`, rounded up, when `authenticate` is
   * set; no cap without it (every client is then the same principal).
   */
  readonly maxSessionsPerPrincipal?: number | "none" | undefined
  /**
   * A session that has not completed the handshake (`notifications/initialized`,
   * or any request other than `ping`) this long after it was created is
   * closed once no request runs in it; open streams do not keep it. Default 30 seconds.
   */
  readonly handshakeTimeout?: Duration.Input | "never" | undefined
  /**
   * Requests being answered and SSE streams open at once, server-wide. A
   * request holds its slot until its handler ends, even when the client has
   * disconnected (a disconnect does not cancel the handler). Default 1000.
   */
  readonly maxStreams?: number | undefined
  /**
   * The same, per principal (named by `authenticate`); past it the answer is
   * 429. `"none"`: no cap. Default: a quarter of `maxStreams`, rounded up,
   * when `authenticate` is set (room for a GET stream in each of
   * `maxSessionsPerPrincipal` sessions and for requests besides); no cap
   * without it (every client is then the same principal).
   */
  readonly maxStreamsPerPrincipal?: number | "none" | undefined
  /** The same, per session. Default 100. */
  readonly maxStreamsPerSession?: number | undefined
  /**
   * Entries a JSON-RPC batch may hold; a longer batch is refused whole with
   * 413. Each request in an accepted batch takes a slot of `maxStreams`,
   * `maxStreamsPerPrincipal` and `maxStreamsPerSession`; requests past a full
   * limit are answered with an error entry. Default 100.
   */
  readonly maxBatchSize?: number | undefined
  /** A session with no request, stream or running handler for this long is closed. Default 30 minutes. */
  readonly sessionIdleTimeout?: Duration.Input | "never" | undefined
  /** Keep-alive comment interval on SSE streams. Default 15 seconds. */
  readonly keepAliveInterval?: Duration.Input | "never" | undefined
  /** The SSE `retry` field sent with priming events (how long a client waits before resuming). Default 1 second. */
  readonly sseRetry?: Duration.Input | "never" | undefined
  /**
   * Bytes one server-to-client stream (legacy SSE, a Streamable HTTP GET or
   * POST stream, a broadcast listener) may hold for a client that reads
   * slower than the server writes: what waits in its queue plus the chunk
   * handed to the socket and not yet taken. Past it the connection is cut
   * (Streamable HTTP and broadcast streams stay resumable with
   * `Last-Event-ID`; a legacy session ends, and from half of it its POSTs
   * that would add a reply get 503). One larger message is still sent whole.
   * Every answer, JSON or SSE, counts against it too, as the bytes Node
   * holds for its connection that the socket has not taken: past it, a
   * connection whose socket takes nothing for a quarter of `sendTimeout` is
   * cut, so a large answer goes only to a client that keeps reading.
   * Default 4 MiB.
   */
  readonly maxBufferedBytesPerStream?: number | undefined
  /**
   * How long any response (JSON or SSE) may have bytes waiting that its
   * socket takes none of; past it the connection is cut (socket reset and
   * destroyed, its buffers freed). Also the unit of the shorter allowance
   * past `maxBufferedBytesPerStream`. `"never"`: no timeout. Default 30 seconds.
   */
  readonly sendTimeout?: Duration.Input | "never" | undefined
  /** Broadcast events buffered per `GET /mcp/events` listener before it is dropped. Default 256. */
  readonly broadcastBuffer?: number | undefined
  /**
   * Server-initiated messages a session keeps while no GET stream is connected
   * (oldest go first); a connected GET stream that falls this many behind is
   * cut. Default 1000.
   */
  readonly standaloneBuffer?: number | undefined
  /** Default timeout of requests the handler sends the client. Default 60 seconds. */
  readonly clientRequestTimeout?: Duration.Input | undefined
  /** Replay storage; default: the `EventStore` service when present, else in memory. */
  readonly eventStore?: EventStoreShape | undefined
  /** `Access-Control-Max-Age` on preflight answers, in seconds. Default 600. */
  readonly corsMaxAge?: number | undefined
  /**
   * Called with the id of a session (Streamable HTTP or legacy SSE) after it
   * ended: DELETE, idle expiry, a legacy SSE connection going away,
   * `closeSession`, shutdown, eviction; after the handler was told
   * (`Handler.sessionEnded`, which `McpServer` needs nothing wired for).
   * For the application's own bookkeeping. Default: nothing.
   */
  readonly onSessionEnd?: ((sessionId: string) => Effect.Effect<void>) | undefined
  /**
   * On shutdown (the scope closing, `shutdown`), how long the requests
   * already running may still finish; new requests get 503 meanwhile.
   * Past it they are interrupted. Default 10 seconds.
   */
  readonly shutdownGracePeriod?: Duration.Input | undefined
}

export interface Resolved {
  readonly host: string
  readonly port: number
  readonly headersTimeoutMs: number
  readonly requestTimeoutMs: number
  readonly connectionsCheckingIntervalMs: number
  readonly keepAliveTimeoutMs: number
  readonly maxConnections: number
  readonly path: HttpRouter.PathInput
  readonly stateful: boolean
  readonly responseMode: "auto" | "sse"
  readonly sessionlessPost: "reject" | "serve"
  readonly standaloneStream: boolean
  readonly protocolVersions: ReadonlyArray<string>
  readonly eras: "both" | "modern" | "legacy"
  /** The stateless revisions served (those of `protocolVersions`, or all this runtime speaks). */
  readonly statelessVersions: ReadonlyArray<string>
  readonly eventsAndHealth: boolean
  readonly eventsPath: HttpRouter.PathInput
  readonly healthPath: HttpRouter.PathInput
  /** The scrape endpoint's path; undefined when `metrics` is off. */
  readonly metricsPath: HttpRouter.PathInput | undefined
  readonly metricsFormat: { readonly prefix?: string | undefined } | undefined
  readonly legacySse: boolean
  readonly legacySsePath: HttpRouter.PathInput
  readonly legacyMessagesPath: HttpRouter.PathInput
  readonly notFound: boolean
  /** The transport serves its own listener (`layer`): no middleware stands between Node and its routes. */
  readonly ownListener: boolean
  readonly authenticate: Authenticate | undefined
  readonly maxBodyBytes: number
  readonly maxSessions: number
  readonly maxSessionsPerPrincipal: number | undefined
  readonly handshakeTimeoutMs: number | undefined
  readonly maxStreams: number
  readonly maxStreamsPerPrincipal: number | undefined
  readonly maxStreamsPerSession: number
  readonly maxBatchSize: number
  readonly idleTimeoutMs: number | undefined
  readonly keepAliveMs: number | undefined
  readonly retryMs: number | undefined
  readonly maxBufferedBytesPerStream: number
  readonly sendTimeoutMs: number | undefined
  readonly broadcastBuffer: number
  readonly standaloneBuffer: number
  readonly clientRequestTimeoutMs: number
  readonly corsMaxAge: number
  readonly shutdownGracePeriodMs: number
}

/**
 * The default values of the numeric, duration and path options.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults = {
  host: "127.0.0.1",
  port: 8421,
  headersTimeout: "10 seconds",
  requestTimeout: "30 seconds",
  keepAliveTimeout: "5 seconds",
  maxConnections: 2000,
  path: "/mcp",
  eventsPath: "/mcp/events",
  healthPath: "/mcp/health",
  legacySsePath: "/sse",
  legacyMessagesPath: "/messages",
  maxBodyBytes: 10 * 1024 * 1024,
  maxSessions: 1000,
  maxStreams: 1000,
  maxStreamsPerSession: 100,
  maxBatchSize: BatchLimit.DEFAULT_MAX_BATCH_SIZE,
  sessionIdleTimeout: "30 minutes",
  handshakeTimeout: "30 seconds",
  keepAliveInterval: "15 seconds",
  sseRetry: "1 second",
  maxBufferedBytesPerStream: 4 * 1024 * 1024,
  sendTimeout: "30 seconds",
  broadcastBuffer: 256,
  standaloneBuffer: 1000,
  clientRequestTimeout: "60 seconds",
  corsMaxAge: 600,
  shutdownGracePeriod: "10 seconds"
} as const

const millis = (input: Duration.Input | "never" | undefined, fallback: Duration.Input): number | undefined => {
  if (input === "never") return undefined
  const ms = Duration.toMillis(Duration.fromInputUnsafe(input ?? fallback))
  return Number.isFinite(ms) && ms > 0 ? ms : undefined
}

/** Whole milliseconds as Node's server timeouts take them: 0 (none) for an infinite duration, else at least 1. */
const timeoutMillis = (input: Duration.Input | undefined, fallback: Duration.Input): number => {
  const ms = Duration.toMillis(Duration.fromInputUnsafe(input ?? fallback))
  return Number.isFinite(ms) ? Math.max(1, Math.round(ms)) : 0
}

/**
 * Node looks for expired header and request timeouts on an interval (30 s
 * unless told), which would let a stalled connection live up to that much
 * past its timeout: look four times per the shorter timeout, at most once a
 * second.
 */
const checkingInterval = (headersMs: number, requestMs: number): number => {
  const shortest = Math.min(...[headersMs, requestMs].filter((ms) => ms > 0))
  return Number.isFinite(shortest) ? Math.min(1000, Math.max(10, Math.floor(shortest / 4))) : 1000
}

/**
 * A per-principal cap: the option, else the server-wide cap divided by
 * `share`, rounded up. Without `authenticate` every client is the anonymous
 * principal: a default cap would only shrink the server-wide one.
 */
const perPrincipal = (
  o: Options,
  option: number | "none" | undefined,
  serverWide: number,
  share: number
): number | undefined => {
  if (option === "none") return undefined
  if (option !== undefined) return option
  return o.authenticate === undefined && o.authorization === undefined ? undefined : Math.ceil(serverWide / share)
}

export const resolve = (options: Options | undefined, standalone: boolean): Resolved => {
  const o = options ?? {}
  const requestTimeoutMs = timeoutMillis(o.requestTimeout, defaults.requestTimeout)
  const headersMs = timeoutMillis(o.headersTimeout, defaults.headersTimeout)
  // Node refuses a header timeout longer than the request timeout.
  const headersTimeoutMs = requestTimeoutMs > 0 && headersMs > requestTimeoutMs ? requestTimeoutMs : headersMs
  const maxSessions = o.maxSessions ?? defaults.maxSessions
  const maxStreams = o.maxStreams ?? defaults.maxStreams
  return {
    host: o.host ?? defaults.host,
    port: o.port ?? defaults.port,
    headersTimeoutMs,
    requestTimeoutMs,
    connectionsCheckingIntervalMs: checkingInterval(headersTimeoutMs, requestTimeoutMs),
    keepAliveTimeoutMs: timeoutMillis(o.keepAliveTimeout, defaults.keepAliveTimeout),
    maxConnections: o.maxConnections ?? defaults.maxConnections,
    path: o.path ?? defaults.path,
    stateful: (o.mode ?? "stateful") === "stateful",
    responseMode: o.responseMode ?? "auto",
    sessionlessPost: o.sessionlessPost ?? "reject",
    standaloneStream: o.standaloneStream ?? true,
    protocolVersions: o.protocolVersions ?? ProtocolVersion.SUPPORTED,
    eras: o.eras ?? "both",
    statelessVersions: o.protocolVersions === undefined
      ? ProtocolVersion.STATELESS
      : ProtocolVersion.STATELESS.filter((v) => o.protocolVersions!.includes(v)),
    eventsAndHealth: o.eventsAndHealth ?? true,
    eventsPath: o.eventsPath ?? defaults.eventsPath,
    healthPath: o.healthPath ?? defaults.healthPath,
    metricsPath: o.metrics === undefined || o.metrics === false
      ? undefined
      : (o.metrics === true ? undefined : o.metrics.path) ?? "/metrics",
    metricsFormat: typeof o.metrics === "object" && o.metrics.prefix !== undefined ? { prefix: o.metrics.prefix } : undefined,
    legacySse: o.legacySse ?? (o.eras !== "modern"),
    legacySsePath: o.legacySsePath ?? defaults.legacySsePath,
    legacyMessagesPath: o.legacyMessagesPath ?? defaults.legacyMessagesPath,
    notFound: o.notFound ?? standalone,
    ownListener: standalone,
    authenticate: o.authenticate,
    maxBodyBytes: o.maxBodyBytes ?? defaults.maxBodyBytes,
    maxSessions,
    maxSessionsPerPrincipal: perPrincipal(o, o.maxSessionsPerPrincipal, maxSessions, 10),
    handshakeTimeoutMs: millis(o.handshakeTimeout, defaults.handshakeTimeout),
    maxStreams,
    maxStreamsPerPrincipal: perPrincipal(o, o.maxStreamsPerPrincipal, maxStreams, 4),
    maxStreamsPerSession: o.maxStreamsPerSession ?? defaults.maxStreamsPerSession,
    maxBatchSize: o.maxBatchSize ?? defaults.maxBatchSize,
    idleTimeoutMs: millis(o.sessionIdleTimeout, defaults.sessionIdleTimeout),
    keepAliveMs: millis(o.keepAliveInterval, defaults.keepAliveInterval),
    retryMs: millis(o.sseRetry, defaults.sseRetry),
    maxBufferedBytesPerStream: o.maxBufferedBytesPerStream ?? defaults.maxBufferedBytesPerStream,
    sendTimeoutMs: millis(o.sendTimeout, defaults.sendTimeout),
    broadcastBuffer: o.broadcastBuffer ?? defaults.broadcastBuffer,
    standaloneBuffer: o.standaloneBuffer ?? defaults.standaloneBuffer,
    clientRequestTimeoutMs: millis(o.clientRequestTimeout, defaults.clientRequestTimeout) ?? 0,
    corsMaxAge: o.corsMaxAge ?? defaults.corsMaxAge,
    shutdownGracePeriodMs: millis(o.shutdownGracePeriod, defaults.shutdownGracePeriod) ?? 0
  }
}
