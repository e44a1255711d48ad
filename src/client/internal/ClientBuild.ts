/**
 * Builds a client over a transport: the call engine, the notification hub,
 * the answers to the server's requests, the handshake and the typed
 * methods. `McpClient` imports this module when a client is made, not when
 * it is imported, so that a script spawns its stdio server before loading
 * the protocol layer, which then loads while the server starts.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Metrics from "../../observability/Metrics.ts"
import type { ClientTransportShape } from "../ClientTransport.ts"
import * as ClientMethods from "./ClientMethods.ts"
import { DEFAULT_CLIENT_INFO, DEFAULT_REQUEST_TIMEOUT, type McpClientOptions } from "./ClientOptions.ts"
import type { McpClientShape } from "./ClientShape.ts"
import * as ClientSpans from "./ClientSpans.ts"
import * as Handshake from "./Handshake.ts"
import * as McpCallEngine from "./McpCallEngine.ts"
import * as NotificationHub from "./NotificationHub.ts"
import * as ServerRequests from "./ServerRequests.ts"

/** The client over `transport`, every request and notification sent through a client span (when a tracer is installed). */
export const build = (
  transport: ClientTransportShape,
  options: McpClientOptions
): Effect.Effect<McpClientShape, Handshake.FlatHandshakeError, Scope.Scope> => buildTraced(ClientSpans.traced(transport), options)

const buildTraced = Effect.fnUntraced(function*(
  transport: ClientTransportShape,
  options: McpClientOptions
): Effect.fn.Return<McpClientShape, Handshake.FlatHandshakeError, Scope.Scope> {
  const requestTimeout = Duration.fromInputUnsafe(options.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT)
  const calls = McpCallEngine.make(transport, requestTimeout, ClientSpans.senderFor(transport))
  // Subscribed before anything is sent, so nothing the server says is missed.
  const hub = yield* NotificationHub.make(transport, calls.routeProgress, options.notificationBuffer ?? 1024)
  yield* transport.setRequestHandler(ServerRequests.serve(options.handlers ?? {}))

  const capabilities = Handshake.declaredCapabilities(options)
  const clientInfo = options.clientInfo ?? DEFAULT_CLIENT_INFO
  const established = yield* Handshake.establish({
    transport,
    options,
    requestTimeout,
    capabilities,
    clientInfo,
    onSchemas: hub.decodeWith
  })
  yield* Metrics.clientSession(established.version, transport.kind)
  return yield* ClientMethods.make({ transport, options, requestTimeout, calls, hub, established, capabilities, clientInfo })
})
