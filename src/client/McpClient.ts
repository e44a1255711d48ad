/**
 * The MCP protocol layer over any client transport: the handshake, version
 * negotiation, capability checks, typed methods with decoded results and
 * typed server notifications. This module makes a client and provides it;
 * the parts live in internal/, loaded when the first client is made
 * (`ClientBuild` puts them together): what a client is (`ClientShape`,
 * `ClientOptions`), the era decision and the handshake (`Handshake`), the
 * typed methods (`ClientMethods`), the notification hub
 * (`NotificationHub`); how a call is sent and timed is the call engine's
 * (`McpCallEngine`), the answers to the server's requests are
 * `ServerRequests`', and the optional keep-alive is `KeepAlive`'s.
 *
 * The handshake is enforced by construction: a client value only exists
 * once `initialize` succeeded and `notifications/initialized` was sent, and
 * the client never hands out the raw transport, so no method can reach the
 * server before the session is set up.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import type { AuthError } from "../AuthError.ts"
import { group, type Grouped } from "../McpErrorGroup.ts"
import { type AuthErrorOf, ClientTransport, type ClientTransportShape } from "./ClientTransport.ts"
import type * as ClientBuild from "./internal/ClientBuild.ts"
import type { McpClientOptions } from "./internal/ClientOptions.ts"
import type { HandshakeError, McpClientShape } from "./internal/ClientShape.ts"

export { type LoggingMessage, type Progress, ServerNotification } from "./internal/ServerNotificationEnum.ts"
export type { CallEvent, CallOptions, PageParams } from "./internal/McpCallEngine.ts"
export type {
  ElicitParams,
  ElicitResult,
  Root,
  SamplingParams,
  SamplingResult,
  ServerRequestHandlers
} from "./internal/ServerRequests.ts"
export { Health, type KeepAliveOptions } from "./internal/KeepAlive.ts"
export { type ListenFilter, ListenState } from "./internal/Listen.ts"
export type { ModernError } from "./internal/ModernCalls.ts"
export type { Implementation } from "../Implementation.ts"
export type { TaskHandle, TaskState, ToolCallTask } from "./TaskHandle.ts"
export { DEFAULT_CLIENT_INFO, DEFAULT_REQUEST_TIMEOUT, type McpClientOptions } from "./internal/ClientOptions.ts"
export type {
  CallToolOptions,
  CallToolParams,
  Cancelled,
  CompleteParams,
  Connection,
  DiscoverResult,
  GetPromptParams,
  HandshakeError,
  ListChanged,
  McpClientError,
  McpClientShape,
  McpNotifyError,
  ResourceUpdated
} from "./internal/ClientShape.ts"

/**
 * The client as a service, provided by `layer`.
 *
 * @since 0.1.0
 * @category services
 */
export class McpClient extends Context.Service<McpClient, McpClientShape>()("effect-mcp-transport/McpClient") {}

// ---------------------------------------------------------------------------
// Construction

/**
 * Runs the handshake over a transport the caller owns and returns the
 * client. Fails with `UnsupportedProtocolVersion` when the server answers a
 * revision we do not speak; closing the transport is then the owner's
 * scope's job (`layer` and `connect` do it).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromTransport = <A extends AuthError = AuthError>(
  transport: ClientTransportShape<A>,
  options: McpClientOptions = {}
): Effect.Effect<McpClientShape<A>, HandshakeError<A>, Scope.Scope> =>
  // The transport's errors are its own `A` and the flat transport errors; grouped, they are those of `McpClientError<A>`.
  Effect.mapError(
    Effect.flatMap(loadBuild, (builder) => builder.build(transport, options)),
    group
  ) as Effect.Effect<McpClientShape<A>, HandshakeError<A>, Scope.Scope>

let building: Promise<typeof ClientBuild> | undefined

/**
 * The protocol layer, imported when the first client is made: by then a
 * stdio transport has spawned its server, which starts while this loads.
 */
const loadBuild: Effect.Effect<typeof ClientBuild> = Effect.promise(() => building ??= import("./internal/ClientBuild.ts"))

/**
 * The handshake over the `ClientTransport` in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: McpClientOptions = {}): Effect.Effect<McpClientShape, HandshakeError, ClientTransport | Scope.Scope> =>
  Effect.flatMap(ClientTransport, (transport) => fromTransport(transport, options))

/**
 * Builds the transport and the client in one scope: closing it closes the
 * client and the transport (the process is killed, the session deleted); a
 * failed handshake closes the transport at once.
 *
 * The transport may be chosen at run time: `connect(isUrl ? StreamableHttpClientTransport.make(…) :
 * StdioClientTransport.make(…))` needs the services of both branches.
 *
 * @since 0.1.0
 * @category constructors
 */
export const connect = <T extends Effect.Effect<ClientTransportShape<any>, any, any>>(
  transport: T,
  options: McpClientOptions = {}
): Effect.Effect<
  McpClientShape<AuthErrorOf<Effect.Success<T>>>,
  Grouped<Effect.Error<T>> | HandshakeError<AuthErrorOf<Effect.Success<T>>>,
  Exclude<Effect.Services<T>, Scope.Scope> | Scope.Scope
> =>
  Effect.gen(function*() {
    const outer = yield* Effect.scope
    const scope = yield* Scope.fork(outer)
    return yield* Effect.gen(function*() {
      const t = yield* transport
      return yield* fromTransport(t, options)
    }).pipe(
      // The transport's own failures (a process that did not start…) are grouped like the client's.
      Effect.mapError(group),
      Scope.provide(scope),
      Effect.onExit((exit) => exit._tag === "Failure" ? Scope.close(scope, exit) : Effect.void)
    )
  })

/**
 * The client as a layer over a transport layer: `McpClient.layer(opts).pipe(Layer.provide(transportLayer))`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: McpClientOptions = {}): Layer.Layer<McpClient, HandshakeError, ClientTransport> =>
  Layer.effect(McpClient, make(options))
