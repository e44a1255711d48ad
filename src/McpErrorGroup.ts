/**
 * The client's public errors, grouped: four tagged classes, each with a
 * `reason` that is one of the flat errors of `McpError` and `AuthError`.
 * `Effect.catchTag("McpTransportError", …)` handles a whole group,
 * `Effect.catchReason("McpTransportError", "RequestTimeout", …)` one reason
 * in it, and `Effect.unwrapReason("McpTransportError")` puts the reasons back
 * in the error channel. A group's message is its reason's.
 */
import * as Data from "effect/Data"
import type { AuthError } from "./AuthError.ts"
import type {
  CapabilityNotSupported,
  ClientRequestUnavailable,
  HeaderMismatch,
  HttpError,
  InvalidPayload,
  MalformedMessage,
  MessageTooLarge,
  MissingClientCapability,
  NoResponse,
  RedirectRefused,
  RequestTimeout,
  RpcError,
  SessionExpired,
  SpawnError,
  TaskCancelled,
  TooManyInputRounds,
  TransportClosed,
  UnsupportedProtocolVersion
} from "./McpError.ts"

/**
 * Why a message did not get through, or no answer came back.
 *
 * @since 0.1.0
 * @category models
 */
export type TransportReason =
  | TransportClosed
  | RequestTimeout
  | MessageTooLarge
  | HttpError
  | RedirectRefused
  | SessionExpired
  | NoResponse
  | MalformedMessage
  | SpawnError

/**
 * What the server answered instead of a result: a JSON-RPC error, or (for a
 * request it ran as a task) a task that ended `cancelled`.
 *
 * @since 0.1.0
 * @category models
 */
export type ServerReason = RpcError | TaskCancelled

/**
 * A rule of the protocol the exchange broke: a capability not declared, a
 * payload of the wrong shape, a revision or header the peers disagree on.
 *
 * @since 0.1.0
 * @category models
 */
export type ProtocolReason =
  | CapabilityNotSupported
  | InvalidPayload
  | HeaderMismatch
  | MissingClientCapability
  | UnsupportedProtocolVersion
  | TooManyInputRounds
  | ClientRequestUnavailable

/**
 * Every flat error a group holds.
 *
 * @since 0.1.0
 * @category models
 */
export type Reason = TransportReason | ServerReason | ProtocolReason | AuthError

/**
 * The transport failed: the connection closed, a request timed out, a message
 * was too large or malformed, HTTP refused, the process did not start.
 *
 * @since 0.1.0
 * @category errors
 */
export class McpTransportError extends Data.TaggedError("McpTransportError")<{
  readonly reason: TransportReason
}> {
  override get message(): string {
    return this.reason.message
  }
}

/**
 * The server answered with a JSON-RPC error (`RpcError`), or the task it ran
 * the request as was cancelled (`TaskCancelled`).
 *
 * @since 0.1.0
 * @category errors
 */
export class McpServerError extends Data.TaggedError("McpServerError")<{
  readonly reason: ServerReason
}> {
  override get message(): string {
    return this.reason.message
  }
}

/**
 * The exchange broke a rule of the protocol (see `ProtocolReason`).
 *
 * @since 0.1.0
 * @category errors
 */
export class McpProtocolError extends Data.TaggedError("McpProtocolError")<{
  readonly reason: ProtocolReason
}> {
  override get message(): string {
    return this.reason.message
  }
}

/**
 * Authorization failed (only transports that sign in, i.e. HTTP ones, fail with it).
 *
 * @since 0.1.0
 * @category errors
 */
export class McpAuthError extends Data.TaggedError("McpAuthError")<{
  readonly reason: AuthError
}> {
  override get message(): string {
    return this.reason.message
  }
}

/**
 * Any group.
 *
 * @since 0.1.0
 * @category models
 */
export type McpErrorGroup = McpTransportError | McpServerError | McpProtocolError | McpAuthError

/**
 * The group a flat error belongs to; any other error stays as it is.
 *
 * @since 0.1.0
 * @category models
 */
export type Grouped<E> = E extends TransportReason ? McpTransportError
  : E extends ServerReason ? McpServerError
  : E extends ProtocolReason ? McpProtocolError
  : E extends AuthError ? McpAuthError
  : E

/** The tags of a union, every one of them (the compiler refuses a list that misses one). */
const tags = <E extends { readonly _tag: string }>() =>
<const T extends ReadonlyArray<E["_tag"]>>(
  list: T & ([Exclude<E["_tag"], T[number]>] extends [never] ? unknown : { readonly missing: Exclude<E["_tag"], T[number]> })
): ReadonlySet<string> => new Set(list)

const TRANSPORT = tags<TransportReason>()([
  "TransportClosed",
  "RequestTimeout",
  "MessageTooLarge",
  "HttpError",
  "RedirectRefused",
  "SessionExpired",
  "NoResponse",
  "MalformedMessage",
  "SpawnError"
])
const PROTOCOL = tags<ProtocolReason>()([
  "CapabilityNotSupported",
  "InvalidPayload",
  "HeaderMismatch",
  "MissingClientCapability",
  "UnsupportedProtocolVersion",
  "TooManyInputRounds",
  "ClientRequestUnavailable"
])
const AUTH = tags<AuthError>()([
  "DiscoveryFailed",
  "RegistrationRefused",
  "UserDenied",
  "AuthorizationRefused",
  "StateMismatch",
  "InvalidGrant",
  "TokenEndpointFailed",
  "TokenRejected",
  "InteractionRequired",
  "TokenStoreFailed",
  "DpopNonceRejected",
  "AssertionUnavailable",
  "ForbiddenAddress",
  "IssuerMismatch"
])

const tagOf = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && typeof (error as { _tag?: unknown })._tag === "string"
    ? (error as { _tag: string })._tag
    : undefined

/**
 * Puts a flat error in its group; a group, or any other error, is returned as it is.
 *
 * @since 0.1.0
 * @category constructors
 */
export const group = <E>(error: E): Grouped<E> => {
  const tag = tagOf(error)
  if (tag === undefined) return error as Grouped<E>
  if (TRANSPORT.has(tag)) return new McpTransportError({ reason: error as TransportReason }) as Grouped<E>
  if (tag === "RpcError" || tag === "TaskCancelled") return new McpServerError({ reason: error as ServerReason }) as Grouped<E>
  if (PROTOCOL.has(tag)) return new McpProtocolError({ reason: error as ProtocolReason }) as Grouped<E>
  if (AUTH.has(tag)) return new McpAuthError({ reason: error as AuthError }) as Grouped<E>
  return error as Grouped<E>
}

/**
 * Whether a tag names one of the authorization failures (`McpAuthError`'s reasons).
 *
 * @since 0.1.0
 * @category utils
 */
export const isAuthReason = (tag: string): boolean => AUTH.has(tag)

/**
 * The flat error inside a group; any other value is returned as it is (the CLI
 * and logs look through the group this way).
 *
 * @since 0.1.0
 * @category utils
 */
export const reasonOf = (error: unknown): unknown => {
  const tag = tagOf(error)
  return tag === "McpTransportError" || tag === "McpServerError" || tag === "McpProtocolError" || tag === "McpAuthError"
    ? (error as McpErrorGroup).reason
    : error
}
