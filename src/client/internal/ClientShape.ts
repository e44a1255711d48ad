/**
 * What a client is, as its callers see it: the shape `McpClient` builds
 * after a successful handshake, the parameters of its typed methods, the
 * typed notifications it hands out, and the error groups its methods fail
 * with. Types only, re-exported by `McpClient`.
 */
import type * as Data from "effect/Data"
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type * as SubscriptionRef from "effect/SubscriptionRef"
import type * as McpSchema from "effect/ai/McpSchema"
import type * as Schema from "effect/Schema"
import type { AuthError } from "../../AuthError.ts"
import type { McpAuthError, McpProtocolError, McpServerError, McpTransportError } from "../../McpErrorGroup.ts"
import type * as ProtocolVersion from "../../ProtocolVersion.ts"
import type { ClientTransportShape } from "../ClientTransport.ts"
import type { TaskHandle, TaskState, ToolCallTask } from "../TaskHandle.ts"
import type * as KeepAlive from "./KeepAlive.ts"
import type * as Listen from "./Listen.ts"
import type { CallEvent, CallOptions, PageParams } from "./McpCallEngine.ts"
import type { LoggingMessage, Progress, ServerNotification } from "./ServerNotificationEnum.ts"

// ---------------------------------------------------------------------------
// Errors

/**
 * What a typed method can fail with: the groups of `McpErrorGroup`, each
 * holding one flat error as its `reason`. `A` is the transport's
 * authorization errors: without any (stdio, in-memory) there is no
 * `McpAuthError`.
 *
 * @since 0.1.0
 * @category errors
 */
export type McpClientError<A = AuthError> =
  | McpTransportError
  | McpServerError
  | McpProtocolError
  | ([A] extends [never] ? never : McpAuthError)

/**
 * What sending a notification can fail with (`A` as in `McpClientError`).
 *
 * @since 0.1.0
 * @category errors
 */
export type McpNotifyError<A = AuthError> = McpTransportError | ([A] extends [never] ? never : McpAuthError)

/**
 * What building a client can fail with: the same groups as a call
 * (`UnsupportedProtocolVersion`, for one, is a reason of `McpProtocolError`).
 *
 * @since 0.1.0
 * @category errors
 */
export type HandshakeError<A = AuthError> = McpClientError<A>

// ---------------------------------------------------------------------------
// Method parameters

type Meta = Readonly<Record<string, unknown>>

/**
 * Parameters of `tools/call`.
 *
 * @since 0.1.0
 * @category models
 */
export interface CallToolParams {
  readonly name: string
  readonly arguments?: Readonly<Record<string, unknown>> | undefined
  readonly _meta?: Meta | undefined
}

/**
 * Options of `callTool`: the call's options, and the Schema of the tool's declared failure.
 *
 * @since 0.1.0
 * @category models
 */
export interface CallToolOptions<F extends Schema.Top = never> extends CallOptions {
  /** The tool's `failure` Schema: a tool error carrying its JSON fails with the decoded value. Default: none. */
  readonly failure?: F | undefined
  /**
   * Sees each state of the task the server runs the call as (the tasks
   * extension), from the one it was created in to the terminal one; never
   * called for a call answered at once.
   */
  readonly onTaskState?: ((state: TaskState) => Effect.Effect<void>) | undefined
}

/**
 * Parameters of `prompts/get`.
 *
 * @since 0.1.0
 * @category models
 */
export interface GetPromptParams {
  readonly name: string
  readonly arguments?: Readonly<Record<string, string>> | undefined
  readonly _meta?: Meta | undefined
}

/**
 * Parameters of `completion/complete`.
 *
 * @since 0.1.0
 * @category models
 */
export interface CompleteParams {
  readonly ref:
    | { readonly type: "ref/prompt"; readonly name: string }
    | { readonly type: "ref/resource"; readonly uri: string }
  readonly argument: { readonly name: string; readonly value: string }
  readonly context?: { readonly arguments?: Readonly<Record<string, string>> | undefined } | undefined
}

/**
 * The part of the transport the application may see: state and diagnostics, never the raw request path.
 *
 * @since 0.1.0
 * @category models
 */
export type Connection = Pick<
  ClientTransportShape,
  "kind" | "state" | "diagnostics" | "stderr" | "awaitClosed" | "pendingCount"
>

/**
 * A client after a successful handshake: what the server said, and the typed methods and notifications.
 * Its methods fail with the groups of `McpErrorGroup`; `A` is what its
 * transport's sign-in can fail with (`never` over stdio and in memory).
 *
 * @since 0.1.0
 * @category models
 */
export interface McpClientShape<A = AuthError> {
  /** `"modern"` (stateless, 2026-07-28 on) or `"legacy"` (the `initialize` handshake). */
  readonly era: ProtocolVersion.Era
  /** What the server said it is: the `initialize` result, or (stateless era) the same fields from `server/discover`. */
  readonly initializeResult: McpSchema.InitializeResult
  /** Stateless era: the `server/discover` result as the server sent it (with `supportedVersions` and cache hints). */
  readonly discoverResult: DiscoverResult | undefined
  readonly protocolVersion: ProtocolVersion.AnyVersion
  /** Stateless era: the `subscriptions/listen` stream's state (`Off` in the handshake era). */
  readonly subscription: SubscriptionRef.SubscriptionRef<Listen.ListenState>
  readonly serverInfo: McpSchema.Implementation
  readonly serverCapabilities: McpSchema.ServerCapabilities
  readonly instructions: string | undefined
  /** The capabilities we declared. */
  readonly clientCapabilities: Readonly<Record<string, unknown>>
  readonly connection: Connection
  /** `Healthy` unless keep-alive pings keep failing. */
  readonly health: SubscriptionRef.SubscriptionRef<KeepAlive.Health>

  readonly ping: (options?: CallOptions) => Effect.Effect<void, McpClientError<A>>
  /**
   * Stateless era: the server's `server/discover` result, reused for the
   * `ttlMs` it allows (unless `cache: false`). In the handshake era it fails
   * with `CapabilityNotSupported`: the `initialize` result says the same.
   */
  readonly discover: (options?: CallOptions) => Effect.Effect<DiscoverResult, McpClientError<A>>

  readonly listTools: (params?: PageParams, options?: CallOptions) => Effect.Effect<McpSchema.ListToolsResult, McpClientError<A>>
  /** Every tool, page after page. */
  readonly tools: (options?: CallOptions) => Stream.Stream<McpSchema.Tool, McpClientError<A>>
  readonly listAllTools: (options?: CallOptions) => Effect.Effect<ReadonlyArray<McpSchema.Tool>, McpClientError<A>>
  /**
   * Calls a tool. With `failure`, a tool error carrying that Schema's JSON (what a server tool
   * declaring the same `failure` sends) fails with the decoded value instead of succeeding.
   */
  readonly callTool: <F extends Schema.Top = never>(
    params: CallToolParams,
    options?: CallToolOptions<F>
  ) => Effect.Effect<McpSchema.CallToolResult, McpClientError<A> | F["Type"], F["DecodingServices"]>
  readonly callToolStream: (
    params: CallToolParams,
    options?: CallOptions
  ) => Stream.Stream<CallEvent<McpSchema.CallToolResult>, McpClientError<A>>
  /**
   * Calls a tool and, when the server runs the call as a task (the tasks
   * extension), answers the task's handle instead of following it; otherwise
   * the result (`_tag: "Answered"`).
   */
  readonly callToolTask: (
    name: string,
    args?: Readonly<Record<string, unknown>>,
    options?: CallOptions
  ) => Effect.Effect<ToolCallTask<A>, McpClientError<A>>
  /** The handle of a task known by its id (kept from `callToolTask`, say, across a restart); sends nothing. */
  readonly task: (taskId: string) => TaskHandle<A>

  readonly listResources: (
    params?: PageParams,
    options?: CallOptions
  ) => Effect.Effect<McpSchema.ListResourcesResult, McpClientError<A>>
  readonly resources: (options?: CallOptions) => Stream.Stream<McpSchema.Resource, McpClientError<A>>
  readonly listAllResources: (options?: CallOptions) => Effect.Effect<ReadonlyArray<McpSchema.Resource>, McpClientError<A>>
  readonly listResourceTemplates: (
    params?: PageParams,
    options?: CallOptions
  ) => Effect.Effect<McpSchema.ListResourceTemplatesResult, McpClientError<A>>
  readonly resourceTemplates: (options?: CallOptions) => Stream.Stream<McpSchema.ResourceTemplate, McpClientError<A>>
  readonly listAllResourceTemplates: (
    options?: CallOptions
  ) => Effect.Effect<ReadonlyArray<McpSchema.ResourceTemplate>, McpClientError<A>>
  readonly readResource: (uri: string, options?: CallOptions) => Effect.Effect<McpSchema.ReadResourceResult, McpClientError<A>>
  readonly subscribeResource: (uri: string, options?: CallOptions) => Effect.Effect<void, McpClientError<A>>
  readonly unsubscribeResource: (uri: string, options?: CallOptions) => Effect.Effect<void, McpClientError<A>>

  readonly listPrompts: (params?: PageParams, options?: CallOptions) => Effect.Effect<McpSchema.ListPromptsResult, McpClientError<A>>
  readonly prompts: (options?: CallOptions) => Stream.Stream<McpSchema.Prompt, McpClientError<A>>
  readonly listAllPrompts: (options?: CallOptions) => Effect.Effect<ReadonlyArray<McpSchema.Prompt>, McpClientError<A>>
  readonly getPrompt: (params: GetPromptParams, options?: CallOptions) => Effect.Effect<McpSchema.GetPromptResult, McpClientError<A>>

  readonly complete: (params: CompleteParams, options?: CallOptions) => Effect.Effect<McpSchema.CompleteResult, McpClientError<A>>
  readonly setLoggingLevel: (level: McpSchema.LoggingLevel, options?: CallOptions) => Effect.Effect<void, McpClientError<A>>

  /** Any other method (extensions, newer revisions): no capability check, result not decoded. */
  readonly request: (
    method: string,
    params?: Readonly<Record<string, unknown>>,
    options?: CallOptions
  ) => Effect.Effect<unknown, McpClientError<A>>
  readonly notify: (method: string, params?: Readonly<Record<string, unknown>>) => Effect.Effect<void, McpNotifyError<A>>
  /** Tells the server our roots changed (needs a `listRoots` handler). */
  readonly notifyRootsListChanged: Effect.Effect<void, McpNotifyError<A> | McpProtocolError>

  /**
   * Every server notification, typed. The stream subscribes when it is run,
   * and nothing is replayed: one forked just before a call may start after
   * the call's first notifications went by. To hear a call's notifications,
   * subscribe first with `subscribeNotifications`.
   */
  readonly notifications: Stream.Stream<ServerNotification>
  /** Progress notifications; subscribes when run (see `notifications`; `subscribeProgress` subscribes at once). */
  readonly progress: Stream.Stream<Progress>
  /** Log messages; subscribes when run (see `notifications`; `subscribeLogging` subscribes at once). */
  readonly logging: Stream.Stream<LoggingMessage>
  /** List changes; subscribes when run (see `notifications`; `subscribeListChanged` subscribes at once). */
  readonly listChanged: Stream.Stream<ListChanged>
  /** Resource updates; subscribes when run (see `notifications`; `subscribeResourceUpdated` subscribes at once). */
  readonly resourceUpdated: Stream.Stream<ResourceUpdated>
  /** Cancellations; subscribes when run (see `notifications`; `subscribeCancelled` subscribes at once). */
  readonly cancelled: Stream.Stream<Cancelled>

  /**
   * Subscribes now, in the caller's scope, and returns the notifications
   * from this moment on: everything the server says after this effect
   * completes is in the stream, however late it is run. The subscription
   * ends with the scope, and the stream with the client; until the stream
   * is read, up to `notificationBuffer` notifications wait in it, the
   * oldest dropped first.
   */
  readonly subscribeNotifications: Effect.Effect<Stream.Stream<ServerNotification>, never, Scope.Scope>
  /** `progress`, subscribed now in the caller's scope (see `subscribeNotifications`). */
  readonly subscribeProgress: Effect.Effect<Stream.Stream<Progress>, never, Scope.Scope>
  /** `logging`, subscribed now in the caller's scope (see `subscribeNotifications`). */
  readonly subscribeLogging: Effect.Effect<Stream.Stream<LoggingMessage>, never, Scope.Scope>
  /** `listChanged`, subscribed now in the caller's scope (see `subscribeNotifications`). */
  readonly subscribeListChanged: Effect.Effect<Stream.Stream<ListChanged>, never, Scope.Scope>
  /** `resourceUpdated`, subscribed now in the caller's scope (see `subscribeNotifications`). */
  readonly subscribeResourceUpdated: Effect.Effect<Stream.Stream<ResourceUpdated>, never, Scope.Scope>
  /** `cancelled`, subscribed now in the caller's scope (see `subscribeNotifications`). */
  readonly subscribeCancelled: Effect.Effect<Stream.Stream<Cancelled>, never, Scope.Scope>
}

/**
 * A tool, resource or prompt list change.
 *
 * @since 0.1.0
 * @category models
 */
export type ListChanged = Data.TaggedEnum.Value<
  ServerNotification,
  "ToolListChanged" | "ResourceListChanged" | "PromptListChanged"
>

/**
 * A `notifications/resources/updated`.
 *
 * @since 0.1.0
 * @category models
 */
export type ResourceUpdated = Data.TaggedEnum.Value<ServerNotification, "ResourceUpdated">

/**
 * A `notifications/cancelled` from the server.
 *
 * @since 0.1.0
 * @category models
 */
export type Cancelled = Data.TaggedEnum.Value<ServerNotification, "Cancelled">

/**
 * What `server/discover` answers (stateless era), as the server sent it.
 *
 * @since 0.1.0
 * @category models
 */
export interface DiscoverResult {
  readonly supportedVersions: ReadonlyArray<string>
  readonly capabilities: Readonly<Record<string, unknown>>
  readonly instructions?: string | undefined
  /** How long the answer may be reused, in milliseconds. */
  readonly ttlMs?: number | undefined
  readonly cacheScope?: "public" | "private" | undefined
  readonly _meta?: Readonly<Record<string, unknown>> | undefined
}
