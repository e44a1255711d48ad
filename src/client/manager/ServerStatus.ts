/**
 * The state machine of one managed server, and the errors the manager adds.
 *
 *   Connecting ──ok──▶ Ready ──transport closed──▶ Reconnecting ──▶ Connecting …
 *       │                │  └──keep-alive fails──▶ Degraded ──▶ Reconnecting
 *       │                └──session expired (404)──▶ Expired ──▶ Connecting (at once)
 *       ├──fails──▶ Reconnecting (schedule delay) or CircuitOpen (cool-down) or Failed (schedule exhausted)
 *   any ──scope closed──▶ Closed
 *
 * Every state but Ready and Closed carries the last error, so a status
 * stream alone explains what is going on.
 */
import * as Data from "effect/Data"
import type * as McpSchema from "effect/ai/McpSchema"

/**
 * The error a status carries to explain itself: any of the library's tagged
 * errors (transport, handshake, configuration, connect timeout).
 *
 * @since 0.1.0
 * @category models
 */
export interface LastError {
  readonly _tag: string
  readonly message: string
}

/**
 * Where one managed server stands: `Connecting`, `Ready`, `Degraded`,
 * `Reconnecting`, `Expired`, `CircuitOpen`, `Failed` or `Closed`; every state
 * but `Ready` and `Closed` carries the last error.
 *
 * @since 0.1.0
 * @category models
 */
export type ServerStatus = Data.TaggedEnum<{
  Connecting: { readonly attempt: number; readonly lastError: LastError | undefined }
  Ready: {
    /** Increases with every new connection (a new process or session). */
    readonly generation: number
    readonly serverInfo: McpSchema.Implementation
    readonly protocolVersion: string
    /** `"modern"` (stateless) or `"legacy"` (handshake): each server of a fleet speaks its own. */
    readonly era: "legacy" | "modern"
  }
  /** Keep-alive pings failed; the connection is being replaced. */
  Degraded: { readonly generation: number; readonly lastError: LastError }
  /** Waiting `delayMs` (from the reconnect schedule) before attempt `attempt`. */
  Reconnecting: { readonly attempt: number; readonly delayMs: number; readonly lastError: LastError }
  /** The server forgot our session; a new one is being set up at once. */
  Expired: { readonly generation: number; readonly lastError: LastError }
  /** Too many failures in a row: no attempt until the cool-down ends (then one trial). */
  CircuitOpen: { readonly retryInMs: number; readonly lastError: LastError }
  /** Given up (bad configuration, or the reconnect schedule ended); `reconnect` starts over. */
  Failed: { readonly lastError: LastError }
  Closed: {}
}>
/**
 * Constructors, `$is` and `$match` for `ServerStatus`.
 *
 * @since 0.1.0
 * @category models
 */
export const ServerStatus = Data.taggedEnum<ServerStatus>()

/** Whether waiting could help (the server is on its way to Ready). */
export const isTransient = (s: ServerStatus): boolean =>
  s._tag === "Connecting" || s._tag === "Reconnecting" || s._tag === "Expired" || s._tag === "Degraded"

/**
 * A connect attempt (opening the transport, the handshake, the first tool
 * listing) that outlasted the server's connect timeout.
 *
 * @since 0.1.0
 * @category errors
 */
export class ConnectTimeout extends Data.TaggedError("ConnectTimeout")<{
  readonly server: string
  readonly timeoutMs: number
}> {
  override get message(): string {
    return `Server ${this.server} did not finish connecting within ${this.timeoutMs}ms`
  }
}

/**
 * A connect attempt that failed with something other than one of the
 * library's tagged errors (a defect), with its description in `reason`.
 *
 * @since 0.1.0
 * @category errors
 */
export class ConnectFailed extends Data.TaggedError("ConnectFailed")<{
  readonly server: string
  readonly reason: string
}> {
  override get message(): string {
    return `Server ${this.server} failed to connect: ${this.reason}`
  }
}

/**
 * No configured server has this name.
 *
 * @since 0.1.0
 * @category errors
 */
export class UnknownServer extends Data.TaggedError("UnknownServer")<{ readonly server: string }> {
  override get message(): string {
    return `No server named ${this.server}`
  }
}

/**
 * A tool name that does not route to a server: it does not start with a
 * configured server's name and the separator (`<server><separator><tool>`).
 *
 * @since 0.1.0
 * @category errors
 */
export class UnknownTool extends Data.TaggedError("UnknownTool")<{ readonly name: string }> {
  override get message(): string {
    return `No tool named ${this.name} (expected <server><separator><tool>)`
  }
}

/**
 * The server cannot take calls now and did not become ready within the wait;
 * `status` says why.
 *
 * @since 0.1.0
 * @category errors
 */
export class ServerUnavailable extends Data.TaggedError("ServerUnavailable")<{
  readonly server: string
  readonly status: ServerStatus
}> {
  override get message(): string {
    const last = "lastError" in this.status && this.status.lastError !== undefined
      ? `: ${this.status.lastError.message}`
      : ""
    return `Server ${this.server} is unavailable (${this.status._tag})${last}`
  }
}
