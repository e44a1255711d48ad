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

/** Any of our tagged errors (transport, handshake, config, timeout). */
export interface LastError {
  readonly _tag: string
  readonly message: string
}

export type ServerStatus = Data.TaggedEnum<{
  Connecting: { readonly attempt: number; readonly lastError: LastError | undefined }
  Ready: {
    /** Increases with every new connection (a new process or session). */
    readonly generation: number
    readonly serverInfo: McpSchema.Implementation
    readonly protocolVersion: string
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
export const ServerStatus = Data.taggedEnum<ServerStatus>()

/** Whether calls can go to the server now. */
export const isUsable = (s: ServerStatus): boolean => s._tag === "Ready"

/** Whether waiting could help (the server is on its way to Ready). */
export const isTransient = (s: ServerStatus): boolean =>
  s._tag === "Connecting" || s._tag === "Reconnecting" || s._tag === "Expired" || s._tag === "Degraded"

export class ConnectTimeout extends Data.TaggedError("ConnectTimeout")<{
  readonly server: string
  readonly timeoutMs: number
}> {
  override get message(): string {
    return `Server ${this.server} did not finish connecting within ${this.timeoutMs}ms`
  }
}

/** A connect attempt that failed with something other than one of our tagged errors (a defect). */
export class ConnectFailed extends Data.TaggedError("ConnectFailed")<{
  readonly server: string
  readonly reason: string
}> {
  override get message(): string {
    return `Server ${this.server} failed to connect: ${this.reason}`
  }
}

export class UnknownServer extends Data.TaggedError("UnknownServer")<{ readonly server: string }> {
  override get message(): string {
    return `No server named ${this.server}`
  }
}

export class UnknownTool extends Data.TaggedError("UnknownTool")<{ readonly name: string }> {
  override get message(): string {
    return `No tool named ${this.name} (expected <server><separator><tool>)`
  }
}

/** The server cannot take calls now (and did not become ready within the wait). */
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
