/**
 * Typed errors: one tagged class per failure kind. Each carries what a caller
 * needs to react (ids, methods, status codes, exit codes, stderr tails), and
 * its message keeps the wording users search for.
 */
import * as Data from "effect/Data"
import type { AuthError } from "./AuthError.ts"
import type { JsonRpcErrorObject, RequestId } from "./JsonRpc.ts"

const MAX_TEXT = 512

/**
 * Cuts text for inclusion in an error, keeping the start where the cause usually is.
 *
 * @since 0.1.0
 * @category utils
 */
export const truncate = (text: string, max: number = MAX_TEXT): string =>
  text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`

/**
 * How the transport ended; the cause users see instead of a bare "Transport closed".
 *
 * @since 0.1.0
 * @category models
 */
export interface CloseDetails {
  /** Why, in a few words: "process exited", "scope closed", "stdout ended", "SSE stream ended"… */
  readonly reason: string
  readonly exitCode?: number | undefined
  readonly signal?: string | undefined
  /** The last lines the server wrote to stderr before it went away. */
  readonly stderrTail?: ReadonlyArray<string> | undefined
  readonly cause?: unknown
}

/**
 * The connection is closed: what was pending on it, and what is sent on it afterwards, fails with this.
 *
 * Its fields (`CloseDetails`) say how it ended: the reason and, for a child process, its exit
 * code, signal and last stderr lines, which the message shows.
 *
 * @since 0.1.0
 * @category errors
 */
export class TransportClosed extends Data.TaggedError("TransportClosed")<CloseDetails> {
  override get message(): string {
    const parts: Array<string> = [this.reason]
    if (this.exitCode !== undefined) parts.push(`exit code ${this.exitCode}`)
    if (this.signal !== undefined) parts.push(`signal ${this.signal}`)
    let text = `Transport closed (${parts.join(", ")})`
    if (this.stderrTail !== undefined && this.stderrTail.length > 0) {
      text += `\nLast stderr lines:\n${this.stderrTail.map((l) => `  ${l}`).join("\n")}`
    }
    return text
  }
}

/**
 * A request got no response in time.
 *
 * `phase`, when present, says what ran out, e.g. "SSE stream silent" or "Maximum total time exceeded".
 *
 * @since 0.1.0
 * @category errors
 */
export class RequestTimeout extends Data.TaggedError("RequestTimeout")<{
  readonly method: string
  readonly id: RequestId
  readonly timeoutMs: number
  /** What timed out when it is not the whole request, e.g. "SSE stream silent". */
  readonly phase?: string | undefined
}> {
  override get message(): string {
    return this.phase === undefined
      ? `Request timeout after ${this.timeoutMs}ms (${this.method}, id ${this.id})`
      : `${this.phase}: request timeout after ${this.timeoutMs}ms (${this.method}, id ${this.id})`
  }
}

/**
 * The peer answered with a JSON-RPC error object.
 *
 * @since 0.1.0
 * @category errors
 */
export class RpcError extends Data.TaggedError("RpcError")<{
  readonly code: number
  readonly rpcMessage: string
  readonly data?: unknown
  readonly method?: string | undefined
  readonly id?: RequestId | null | undefined
}> {
  override get message(): string {
    return `MCP error ${this.code}: ${this.rpcMessage}`
  }
  static fromObject(error: JsonRpcErrorObject, method?: string, id?: RequestId | null): RpcError {
    return new RpcError({ code: error.code, rpcMessage: error.message, data: error.data, method, id })
  }
  toObject(): JsonRpcErrorObject {
    return this.data === undefined
      ? { code: this.code, message: this.rpcMessage }
      : { code: this.code, message: this.rpcMessage, data: this.data }
  }
}

/** How much of a malformed message its error keeps. */
const MALFORMED_TEXT = 200

/**
 * A frame or body that is not JSON, or not a JSON-RPC message.
 *
 * @since 0.1.0
 * @category errors
 */
export class MalformedMessage extends Data.TaggedError("MalformedMessage")<{
  /** The offending text, cut to a sane length. */
  readonly text: string
  readonly reason: string
  /** The request the malformed message answered, when its id could be read. */
  readonly method?: string | undefined
  readonly id?: RequestId | undefined
}> {
  override get message(): string {
    const answering = this.method === undefined ? "" : ` (in answer to ${this.method}, id ${this.id})`
    return `Malformed message${answering}: ${this.reason}: ${this.text}`
  }
  static make(text: string, reason: string): MalformedMessage {
    return new MalformedMessage({ text: truncate(text, MALFORMED_TEXT), reason })
  }
  /** A response to request `id` (of `method`) that is not a valid JSON-RPC response. */
  static answering(text: string, reason: string, method: string, id: RequestId): MalformedMessage {
    return new MalformedMessage({ text: truncate(text, MALFORMED_TEXT), reason, method, id })
  }
}

/**
 * A message over the size limit (`limit` bytes): an outgoing one is not sent; an incoming one is read no further.
 *
 * @since 0.1.0
 * @category errors
 */
export class MessageTooLarge extends Data.TaggedError("MessageTooLarge")<{
  readonly limit: number
  /** Bytes seen when the limit was crossed (a lower bound of the message size). */
  readonly size: number
  readonly direction: "incoming" | "outgoing"
}> {
  override get message(): string {
    return `Message too large: ${this.direction} message of at least ${this.size} bytes exceeds the limit of ${this.limit} bytes`
  }
}

/**
 * The stdio client could not start the server's process (command not found, not executable…).
 *
 * @since 0.1.0
 * @category errors
 */
export class SpawnError extends Data.TaggedError("SpawnError")<{
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly cause: unknown
}> {
  override get message(): string {
    const detail = this.cause instanceof Error ? this.cause.message : String(this.cause)
    return `Failed to spawn ${[this.command, ...this.args].join(" ")}: ${detail}`
  }
}

/**
 * Non-2xx HTTP answer.
 *
 * @since 0.1.0
 * @category errors
 */
export class HttpError extends Data.TaggedError("HttpError")<{
  readonly status: number
  /** The response body as text, cut to a sane length. */
  readonly body: string
  readonly method?: string | undefined
  readonly wwwAuthenticate?: string | undefined
  readonly mcpAuthServer?: string | undefined
  /**
   * The answer's `Retry-After`, in milliseconds from when it came (a date is
   * turned into the wait until then): when the server says to ask again.
   * `undefined` without the header or with one that is neither.
   */
  readonly retryAfterMs?: number | undefined
}> {
  override get message(): string {
    let text = `HTTP ${this.status}: ${this.body}`
    if (this.wwwAuthenticate !== undefined) text += ` (WWW-Authenticate: ${this.wwwAuthenticate})`
    if (this.mcpAuthServer !== undefined) text += ` (Mcp-Auth-Server: ${this.mcpAuthServer})`
    if (this.retryAfterMs !== undefined) text += ` (Retry-After: ${this.retryAfterMs} ms)`
    return text
  }
}

/**
 * An HTTP redirect the transport would not follow: to another origin, one
 * that would change the method, a `Location` that is not a URL, or one hop
 * too many.
 *
 * @since 0.1.0
 * @category errors
 */
export class RedirectRefused extends Data.TaggedError("RedirectRefused")<{
  readonly status: number
  /** Where the redirect pointed: resolved against `url` when it is a URL, as sent otherwise. */
  readonly location: string
  /** The URL that answered with the redirect. */
  readonly url: string
  readonly method?: string | undefined
  /** Why it was not followed, in a few words. */
  readonly reason: string
}> {
  override get message(): string {
    return `Redirect refused: HTTP ${this.status} from ${this.url} to ${this.location} (${this.reason})`
  }
}

/**
 * The server no longer knows our session (HTTP 404 on a request that carried a session id).
 *
 * @since 0.1.0
 * @category errors
 */
export class SessionExpired extends Data.TaggedError("SessionExpired")<{
  readonly sessionId: string
}> {
  override get message(): string {
    return `Session expired: ${this.sessionId}`
  }
}

/**
 * A response stream ended before the response to this request arrived.
 *
 * @since 0.1.0
 * @category errors
 */
export class NoResponse extends Data.TaggedError("NoResponse")<{
  readonly id: RequestId
  readonly method: string
}> {
  override get message(): string {
    return `No response received for request ID ${this.id} (${this.method})`
  }
}

/**
 * No protocol revision both sides speak: the server answered `initialize`
 * with a revision this client does not speak (`received`), or refused the
 * requested stateless revision (`-32022`, with the revisions it `supported`)
 * and none of those is one this client speaks.
 *
 * @since 0.1.0
 * @category errors
 */
export class UnsupportedProtocolVersion extends Data.TaggedError("UnsupportedProtocolVersion")<{
  readonly requested: string
  /** The revision the server answered `initialize` with; absent when it refused with `-32022`. */
  readonly received?: string | undefined
  /** The revisions this client speaks, or (after a `-32022`) those the server said it supports. */
  readonly supported: ReadonlyArray<string>
}> {
  override get message(): string {
    return this.received === undefined
      ? `Unsupported protocol version: the server refused ${this.requested} and supports ${this.supported.join(", ")}`
      : `Unsupported protocol version: the server answered ${this.received}, we asked for ${this.requested} and support ${
        this.supported.join(", ")
      }`
  }
}

/**
 * The server found the request's headers at odds with its body, or a
 * required header missing or malformed (`-32020`, HTTP 400).
 *
 * @since 0.1.0
 * @category errors
 */
export class HeaderMismatch extends Data.TaggedError("HeaderMismatch")<{
  readonly method: string
  /** The server's explanation. */
  readonly rpcMessage: string
  readonly data?: unknown
}> {
  override get message(): string {
    return `Header mismatch (${this.method}): ${this.rpcMessage}`
  }
}

/**
 * The server needs a client capability this request did not declare
 * (`-32021`); `requiredCapabilities` says which.
 *
 * @since 0.1.0
 * @category errors
 */
export class MissingClientCapability extends Data.TaggedError("MissingClientCapability")<{
  readonly method: string
  readonly requiredCapabilities: Readonly<Record<string, unknown>>
  readonly rpcMessage: string
}> {
  override get message(): string {
    return `The server needs client capabilities ${JSON.stringify(this.requiredCapabilities)} for ${this.method}: ${this.rpcMessage}`
  }
}

/**
 * A request kept asking for more input (`input_required`) past the client's
 * bound on rounds.
 *
 * @since 0.1.0
 * @category errors
 */
export class TooManyInputRounds extends Data.TaggedError("TooManyInputRounds")<{
  readonly method: string
  readonly rounds: number
}> {
  override get message(): string {
    return `${this.method} still asked for input after ${this.rounds} rounds`
  }
}

/**
 * The server tried to send the client a request (sampling, elicitation,
 * roots, or any other) where no such request can travel: while serving a
 * request of the stateless era, or on a connection of that era, where
 * servers never start requests. Nothing was sent.
 *
 * @since 0.1.0
 * @category errors
 */
export class ClientRequestUnavailable extends Data.TaggedError("ClientRequestUnavailable")<{
  readonly method: string
  /** Why no request can be sent, e.g. "the request being served is of the stateless era (2026-07-28)". */
  readonly reason: string
}> {
  override get message(): string {
    return `Cannot send ${this.method} to the client: ${this.reason}; nothing was sent`
  }
}

/**
 * What a request can fail with on any transport; `A` is the transport's
 * authorization errors (none for a transport that cannot sign in).
 *
 * @since 0.1.0
 * @category models
 */
export type RequestError<A = AuthError> =
  | TransportClosed
  | RequestTimeout
  | RpcError
  | MessageTooLarge
  | HttpError
  | RedirectRefused
  | SessionExpired
  | NoResponse
  | MalformedMessage
  | A

/**
 * What sending a notification can fail with on any transport; `A` as in `RequestError`.
 *
 * @since 0.1.0
 * @category models
 */
export type NotifyError<A = AuthError> =
  | TransportClosed
  | MessageTooLarge
  | HttpError
  | RedirectRefused
  | SessionExpired
  | A

/**
 * The peer did not declare the capability a method needs; nothing was sent.
 *
 * @since 0.1.0
 * @category errors
 */
export class CapabilityNotSupported extends Data.TaggedError("CapabilityNotSupported")<{
  readonly method: string
  /** The capability path that was missing, e.g. `tools` or `resources.subscribe`. */
  readonly capability: string
  /** Whose capability was missing. */
  readonly peer: "server" | "client"
}> {
  override get message(): string {
    return `The ${this.peer} did not declare the ${this.capability} capability (needed for ${this.method}); nothing was sent`
  }
}

/**
 * A message that is valid JSON-RPC but whose payload does not have the shape its method defines.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidPayload extends Data.TaggedError("InvalidPayload")<{
  readonly method: string
  readonly kind: "result" | "params" | "notification"
  /** The schema decoder's explanation. */
  readonly reason: string
}> {
  override get message(): string {
    return `Invalid ${this.kind} for ${this.method}: ${this.reason}`
  }
}

/**
 * A request the server ran as a task (the `io.modelcontextprotocol/tasks`
 * extension) ended `cancelled` instead of with a result: cancelled by the
 * server, or by a client that sent `tasks/cancel` for it.
 *
 * @since 0.1.0
 * @category errors
 */
export class TaskCancelled extends Data.TaggedError("TaskCancelled")<{
  readonly method: string
  readonly taskId: string
  /** The task's `statusMessage`, when the server gave one. */
  readonly statusMessage?: string | undefined
}> {
  override get message(): string {
    const why = this.statusMessage === undefined ? "" : `: ${this.statusMessage}`
    return `The task ${this.taskId} of ${this.method} was cancelled${why}`
  }
}
