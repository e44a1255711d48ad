/**
 * What a manager is made from: its options, how a configuration entry
 * becomes a transport (the default factory, which signs entries with `auth`
 * in through an OAuth provider loaded on first use), and the defaults of
 * its timeouts and reconnect schedule. Re-exported by McpManager.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import type { HttpClient } from "effect/http"
import type { ChildProcessSpawner } from "effect/process"
import type { SpawnError } from "../../McpError.ts"
import type { ClientTransportShape } from "../ClientTransport.ts"
import type * as OAuthProvider from "../auth/OAuthProvider.ts"
import * as FromConfig from "../FromConfig.ts"
import type * as McpClient from "../McpClient.ts"
import type * as CircuitBreaker from "./CircuitBreaker.ts"
import * as Config from "./Config.ts"
import type * as EntryAuth from "./EntryAuth.ts"
import type * as ToolCache from "./ToolCache.ts"

/**
 * Opens the transport for one configured server, in the connection's scope.
 *
 * @since 0.1.0
 * @category models
 */
export type TransportFactory<E = unknown, R = never> = (
  server: string,
  config: Config.ServerConfig
) => Effect.Effect<ClientTransportShape, E, R | Scope.Scope>

/**
 * What an application adds to the `auth` settings of configuration entries:
 * the interactive part of a browser sign-in (the library never opens a
 * browser nor listens for a redirect) and where tokens are kept.
 *
 * @since 0.1.0
 * @category models
 */
export type McpManagerAuth = EntryAuth.Options

/**
 * The default transport factory with `auth` for the entries that ask for
 * OAuth: stdio spawns the command; `http` is Streamable HTTP with the
 * standalone GET stream open; `sse` probes Streamable HTTP, then falls back
 * to legacy HTTP+SSE. An entry's `timeout` becomes the transport's default
 * request timeout. Each entry with `auth` keeps one OAuth provider across
 * reconnections, so its tokens are reused.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromConfigTransportWith = (
  auth: McpManagerAuth = {}
): TransportFactory<SpawnError, ChildProcessSpawner.ChildProcessSpawner | HttpClient.HttpClient> => {
  const providers = new Map<string, OAuthProvider.OAuthProviderShape>()
  const providerOf = (name: string, config: Config.HttpServerConfig, settings: Config.AuthSettings) =>
    Effect.suspend(() => {
      // Keyed by everything that shapes the provider, so an edited entry gets a fresh one.
      const key = JSON.stringify([name, config.url, settings])
      const known = providers.get(key)
      if (known !== undefined) return Effect.succeed(known)
      // Loaded on first use: a manager without OAuth entries does not load the OAuth client.
      return Effect.promise(() => import("./EntryAuth.ts")).pipe(
        Effect.flatMap((EntryAuth) => EntryAuth.provider(settings, auth)),
        Effect.tap((made) => Effect.sync(() => providers.set(key, made)))
      )
    })
  return (name, config) => {
    if (Config.isStdio(config)) {
      return FromConfig.make({
        command: config.command,
        args: config.args,
        env: config.env,
        cwd: config.cwd,
        timeout: config.timeout,
        ...(config.stderr === undefined ? {} : { stderr: { mode: config.stderr } })
      })
    }
    const settings = Config.authOf(config)
    return Effect.flatMap(
      settings === undefined ? Effect.succeed(undefined) : providerOf(name, config, settings),
      (provider) =>
        FromConfig.make({
          type: config.type,
          url: config.url,
          headers: config.headers,
          timeout: config.timeout,
          auth: provider,
          // Servers send list changes and logs outside requests on the standalone stream; it also
          // notices an expired session without waiting for a call.
          streamableHttp: { listen: true }
        })
    )
  }
}

/**
 * The default transport factory, `fromConfigTransportWith()`: entries with
 * `auth` sign in with stored tokens or client credentials only.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromConfigTransport: TransportFactory<
  SpawnError,
  ChildProcessSpawner.ChildProcessSpawner | HttpClient.HttpClient
> = fromConfigTransportWith()

/**
 * Options of `make` and `layer`: the configuration document, how its
 * entries become transports, and how servers connect, heal and cache tools.
 *
 * @since 0.1.0
 * @category models
 */
export interface McpManagerOptions<E = unknown, R = never> {
  /** An `mcpServers` document, decoded here (see `Config`). */
  readonly config: unknown
  /** How an entry becomes a transport (default `fromConfigTransportWith(auth)`, which needs a ChildProcessSpawner and an HttpClient). */
  readonly transport?: TransportFactory<E, R> | undefined
  /** Sign-in for entries with `auth` (used by the default transport factory only). Default: stored tokens and client credentials only. */
  readonly auth?: McpManagerAuth | undefined
  /** Options of every client (client info, server-request handlers, keep-alive…). */
  readonly client?: McpClient.McpClientOptions | undefined
  /** Per-server connect timeout, spawn to ready (default 30 s; a config entry's `connectTimeout` wins). */
  readonly connectTimeout?: Duration.Input | undefined
  /** How long `make` waits for servers before returning with cached tools for the slow ones (default 5 s). */
  readonly slowStartThreshold?: Duration.Input | undefined
  /** Delays between reconnect attempts (default: exponential from 500 ms, ×2, jittered, capped at 30 s, forever). */
  readonly reconnectSchedule?: Schedule.Schedule<unknown, unknown> | undefined
  /** When reconnecting pauses: failures in a row that open the circuit (default 5) and its cool-down (default 60 s). */
  readonly circuitBreaker?: CircuitBreaker.CircuitBreakerOptions | undefined
  /** A connection that lived this long counts as healed: breaker and schedule start over (default 30 s). */
  readonly stableAfter?: Duration.Input | undefined
  /** Where the last good tool listing of each server is kept (default: nowhere). */
  readonly toolCache?: ToolCache.ToolCache | undefined
  /** Between server name and tool name in aggregated tool names (default `__`). */
  readonly toolSeparator?: string | undefined
  /** How long a call waits for a server that is on its way to Ready (default: the connect timeout). */
  readonly callWaitTimeout?: Duration.Input | undefined
  /**
   * Bound on closing every server at once when the scope closes (default 10 s). Each transport
   * bounds its own close too (stdio: grace period, SIGTERM, SIGKILL; HTTP: the DELETE's timeout).
   */
  readonly shutdownTimeout?: Duration.Input | undefined
}

/**
 * The default `connectTimeout`: 30 seconds from opening the transport to a
 * ready client.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_CONNECT_TIMEOUT = Duration.seconds(30)
/**
 * The default `slowStartThreshold`: `make` waits up to 5 seconds for the
 * servers' first connect attempts.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_SLOW_START_THRESHOLD = Duration.seconds(5)
/**
 * The default `stableAfter`: a connection that lived 30 seconds resets the
 * circuit breaker and the reconnect schedule.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_STABLE_AFTER = Duration.seconds(30)
/**
 * The default `shutdownTimeout`: closing the manager waits up to 10 seconds
 * for its servers to close.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_SHUTDOWN_TIMEOUT = Duration.seconds(10)

/**
 * The default `reconnectSchedule`: exponential from 500 ms, doubling,
 * jittered, each delay capped at 30 seconds, without end.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultReconnectSchedule: Schedule.Schedule<unknown, unknown> = Schedule.exponential("500 millis", 2).pipe(
  Schedule.jittered,
  Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, Duration.seconds(30))))
)
