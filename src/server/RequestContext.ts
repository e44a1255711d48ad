/**
 * What a `McpServer` handler receives besides its params: the session's
 * context (its `SessionState` slots, notifications, the principal) and the
 * request's (progress, log messages, and asks to the client), with what
 * the server knows of the client. Re-exported by `McpServer`.
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import type * as Ref from "effect/Ref"
import type * as McpSchema from "effect/ai/McpSchema"
import type * as JsonRpc from "../JsonRpc.ts"
import type {
  CapabilityNotSupported,
  ClientRequestUnavailable,
  InvalidPayload,
  RequestError
} from "../McpError.ts"
import type * as ProtocolVersion from "../ProtocolVersion.ts"
import type { Implementation } from "../Implementation.ts"
import type { HandlerContext } from "./Handler.ts"
import type { SessionState } from "./SessionState.ts"

/**
 * What a request to the client can fail with: the transport's and the client's errors, a
 * capability the client did not declare (nothing sent), or a result that does not decode.
 *
 * @since 0.1.0
 * @category models
 */
export type ClientCallError = RequestError | CapabilityNotSupported | InvalidPayload | ClientRequestUnavailable

/**
 * What the server learned about the client at `initialize`, or (stateless
 * era, `era: "modern"`) from the `_meta` of the request being served.
 *
 * @since 0.1.0
 * @category models
 */
export interface SessionInfo {
  readonly sessionId: string | undefined
  readonly phase: "initializing" | "ready"
  /** `"modern"` while serving a request of the stateless era: nothing here outlives that request. */
  readonly era: ProtocolVersion.Era
  readonly protocolVersion: ProtocolVersion.AnyVersion
  readonly clientInfo: Implementation
  readonly clientCapabilities: Readonly<Record<string, unknown>>
  /** The client's `logging/setLevel`, if it sent one; stateless era: the request's `_meta` log level. */
  readonly logLevel: McpSchema.LoggingLevel | undefined
}

/**
 * The params of `sampling/createMessage`, as `RequestContext.sample` takes them.
 *
 * @since 0.1.0
 * @category models
 */
export type SamplingRequest = typeof McpSchema.CreateMessage.payloadSchema.Encoded

/**
 * The params of `elicitation/create`, as `RequestContext.elicit` takes them.
 *
 * @since 0.1.0
 * @category models
 */
export type ElicitRequest = typeof McpSchema.ElicitRequestParams.Encoded

/**
 * Given to notification handlers: the session and a way to talk back.
 *
 * @since 0.1.0
 * @category models
 */
export interface SessionContext {
  readonly sessionId: string | undefined
  readonly session: SessionInfo
  readonly notify: HandlerContext["notify"]
  /**
   * The `Ref` of a `SessionState` slot for this session, made on first use
   * and finalized when the transport ends the session. With no session
   * behind the message (stateless era, sessionless HTTP POST) the slot
   * lives for this message only.
   */
  readonly sessionState: <A, E, R>(state: SessionState<A, E, R>) => Effect.Effect<Ref.Ref<A>, E, R>
  /** The authenticated principal's id, as the transport names it (`HandlerContext.principal`). */
  readonly principal?: HandlerContext["principal"]
  /** What the bearer token says (`HandlerContext.auth`: HTTP with the `authorization` option). */
  readonly auth?: HandlerContext["auth"]
}

/**
 * Given to request handlers.
 *
 * @since 0.1.0
 * @category models
 */
export interface RequestContext extends SessionContext {
  readonly requestId: JsonRpc.RequestId
  /** The request's `_meta.progressToken`, if it carried one. */
  readonly progressToken: string | number | undefined
  /** Sends `notifications/progress`; does nothing when the request carried no progress token. Best effort. */
  readonly progress: (
    progress: number,
    options?: { readonly total?: number | undefined; readonly message?: string | undefined }
  ) => Effect.Effect<void>
  /**
   * Sends `notifications/message` when `level` is at or above the client's
   * `logging/setLevel`; in the stateless era only when the request asked for
   * a log level, and from that level up. Best effort.
   */
  readonly log: (level: McpSchema.LoggingLevel, data: unknown, logger?: string) => Effect.Effect<void>
  /**
   * `sampling/createMessage`; fails with `CapabilityNotSupported` (nothing
   * sent) unless the client declared sampling. In the stateless era it is an
   * `input_required` round in `tools/call`, `resources/read` and
   * `prompts/get` (the handler runs again from the start with the answer:
   * keep it deterministic up to its asks), and fails at once with
   * `ClientRequestUnavailable` elsewhere.
   */
  readonly sample: (params: SamplingRequest) => Effect.Effect<McpSchema.CreateMessageResult, ClientCallError>
  /** `elicitation/create`; needs the client's elicitation capability (and its `url` mode for URL requests). */
  readonly elicit: (params: ElicitRequest) => Effect.Effect<McpSchema.ElicitResult, ClientCallError>
  /** `roots/list`; needs the client's roots capability. */
  readonly listRoots: Effect.Effect<ReadonlyArray<McpSchema.Root>, ClientCallError>
  /**
   * Any request to the client, unchecked. Stateless era: an `input_required`
   * round for `sampling/createMessage`, `elicitation/create` and
   * `roots/list` where `sample` would be one; anything else fails at once
   * with `ClientRequestUnavailable`.
   */
  readonly request: HandlerContext["request"]
}

// ---------------------------------------------------------------------------
// Definition (immutable, pipeable)
