/**
 * How a client is configured: `McpClientOptions` and the defaults it falls
 * back to. Re-exported by `McpClient`.
 */
import * as Duration from "effect/Duration"
import type * as McpSchema from "effect/ai/McpSchema"
import type { Implementation } from "../../Implementation.ts"
import type * as ProtocolVersion from "../../ProtocolVersion.ts"
import type * as Negotiation from "../Negotiation.ts"
import type * as KeepAlive from "./KeepAlive.ts"
import type { ServerRequestHandlers } from "./ServerRequests.ts"

/**
 * The `clientInfo` sent in `initialize` unless `McpClientOptions.clientInfo` says otherwise.
 *
 * @since 0.1.0
 * @category defaults
 */
export const DEFAULT_CLIENT_INFO: Implementation = { name: "effect-mcp-transport", version: "0.1.0" }

/**
 * The idle timeout of a request unless the client or the call says otherwise: 30 seconds.
 *
 * @since 0.1.0
 * @category defaults
 */
export const DEFAULT_REQUEST_TIMEOUT: Duration.Duration = Duration.seconds(30)

/**
 * How a client introduces itself, what it answers, and how long it waits.
 *
 * @since 0.1.0
 * @category models
 */
export interface McpClientOptions {
  /** Default `{ name: "effect-mcp-transport", version: "0.1.0" }`. */
  readonly clientInfo?: Implementation | undefined
  /**
   * Which era and revision to speak: `"auto"` (default) tries the stateless
   * revision first and falls back to the `initialize` handshake when the
   * server does not speak it (the verdict is cached per server, see
   * `eraKey`); a revision pins it (a stateless one skips the handshake, a
   * handshake one skips the probe).
   */
  readonly protocol?: "auto" | ProtocolVersion.AnyVersion | undefined
  /** The handshake revision `initialize` asks for (default: the newest we speak, 2025-11-25). */
  readonly protocolVersion?: ProtocolVersion.ProtocolVersion | undefined
  /**
   * The server's identity in the era cache (an origin, a command line): with
   * it, a later client of the same server skips the probe. Default: none
   * (each client probes); `McpManager` and the CLI set it.
   */
  readonly eraKey?: string | undefined
  /** Where eras are remembered (default: `Negotiation.CurrentEraCache`, the process-wide `Negotiation.global` unless provided). */
  readonly eraCache?: Negotiation.EraCache | undefined
  /** How long a stdio server has to answer the era probe before it counts as a handshake server (default 5 s). */
  readonly probeTimeout?: Duration.Input | undefined
  /** Stateless era: the log level asked for on every request (default: none, so no log messages). */
  readonly logLevel?: McpSchema.LoggingLevel | undefined
  /** Stateless era: bound on `input_required` rounds of one call (default 10). */
  readonly maxInputRounds?: number | undefined
  /** Stateless era: keep discover and list results for the `ttlMs` the server allows (default true). */
  readonly cache?: boolean | undefined
  /**
   * Stateless era: hold a `subscriptions/listen` stream for the list-changed
   * notifications the server declares, so that `listChanged` and
   * `resourceUpdated` work as in the handshake era. Default: on over stdio
   * and in memory, off over HTTP (as the GET stream is); `false` never.
   */
  readonly listen?: boolean | undefined
  /** Extra capabilities (experimental, extensions) merged into what the handlers imply. */
  readonly capabilities?: Readonly<Record<string, unknown>> | undefined
  /**
   * Declares the tasks extension (`io.modelcontextprotocol/tasks`) so that a
   * server may answer a tool call with a task, which `callTool` then follows
   * to its result (default true; `false` declares nothing, and a task is then
   * an invalid answer).
   */
  readonly tasks?: boolean | undefined
  /** Answers for the requests the server sends (default: none, each answered -32601 but `ping`). */
  readonly handlers?: ServerRequestHandlers | undefined
  /** Idle timeout of each request, restarted by its progress notifications (default 30 s). */
  readonly requestTimeout?: Duration.Input | undefined
  /** Timeout of the `initialize` request (default: `requestTimeout`). */
  readonly initializeTimeout?: Duration.Input | undefined
  /** Pings the server at an interval and reports failures in `health` (default: off). */
  readonly keepAlive?: KeepAlive.KeepAliveOptions | undefined
  /** Per-subscriber buffer of typed notifications before the oldest are dropped (default 1024). */
  readonly notificationBuffer?: number | undefined
}
