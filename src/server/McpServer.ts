/**
 * The server side of the MCP lifecycle, as a `Handler` any server transport
 * can mount (stdio, in-memory, HTTP): `initialize` with version negotiation,
 * automatic `ping`, rejection of everything else until the client sent
 * `notifications/initialized`, `logging/setLevel`, and a method table of
 * Schema-decoded handlers that receive a context for progress, logging and
 * requests to the client (gated by the client's declared capabilities).
 *
 * Per-session state (phase, negotiated version, client capabilities, log
 * level, the handlers' `SessionState` slots) is keyed by the transport's
 * session id and dropped when the transport reports the session ended
 * (`Handler.sessionEnded`): one handle can serve every session of an HTTP
 * server; on stdio and in-memory (no session id) one handle serves one
 * connection, so build one handle per connection there. The handle's state
 * lives in the scope `toHandler` runs in; `layerHttp`, `layerStdio` and
 * `runStdio` build it and mount it in one step.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type * as Stdio from "effect/Stdio"
import type * as HttpServer from "effect/http/HttpServer"
import type { ServeError } from "effect/http/HttpServerError"
import type { TransportClosed } from "../McpError.ts"
import type * as ProtocolVersion from "../ProtocolVersion.ts"
import * as FleetNotify from "./internal/FleetNotify.ts"
import * as LiveCatalogue from "./internal/LiveCatalogue.ts"
import * as RequestStateKeys from "./internal/RequestStateKeys.ts"
import { InputKey } from "./internal/Rounds.ts"
import { capabilities, type McpServer } from "./internal/ServerDefinition.ts"
import * as ServerHandler from "./internal/ServerHandler.ts"
import type { McpServerOptions } from "./internal/ServerOptions.ts"
import * as SessionRecords from "./internal/SessionRecords.ts"
import * as StatelessEra from "./internal/StatelessEra.ts"
import * as TaskRunner from "./internal/TaskRunner.ts"
import * as Catalogue from "./internal/Catalogue.ts"
import type { DefinitionError } from "./DefinitionError.ts"
import type { Handler } from "./Handler.ts"
import type * as HttpServerTransport from "./HttpServerTransport.ts"
import type * as StdioServerTransport from "./StdioServerTransport.ts"
import type { Implementation } from "../Implementation.ts"
import type { SessionInfo } from "./RequestContext.ts"

export type {
  ClientCallError,
  ElicitRequest,
  RequestContext,
  SamplingRequest,
  SessionContext,
  SessionInfo
} from "./RequestContext.ts"

// ---------------------------------------------------------------------------
// Options and contexts

export type { Implementation, McpServerOptions }

// ---------------------------------------------------------------------------
// The definition and the steps that build it

export { capabilities, make, type McpServer, method, middleware, notification } from "./internal/ServerDefinition.ts"

/**
 * The default task TTL: 10 minutes.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_TASK_TTL_MS = TaskRunner.DEFAULT_TTL_MS

/**
 * The default polling interval suggested for tasks: one second.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_TASK_POLL_INTERVAL_MS = TaskRunner.DEFAULT_POLL_INTERVAL_MS

/**
 * The default `requestStateTtl`: 10 minutes.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_REQUEST_STATE_TTL_MS = StatelessEra.DEFAULT_REQUEST_STATE_TTL_MS

/**
 * The default `requestStateMaxBytes`: 256 KiB.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_REQUEST_STATE_MAX_BYTES = StatelessEra.DEFAULT_REQUEST_STATE_MAX_BYTES

/**
 * The default `discovery.ttlMs`: one minute.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_DISCOVERY_TTL_MS = StatelessEra.DEFAULT_DISCOVERY_TTL_MS

/**
 * The default `notInitializedCode`: -32002, the code most MCP clients expect for a request sent before initialization.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_NOT_INITIALIZED_CODE = ServerHandler.DEFAULT_NOT_INITIALIZED_CODE

// ---------------------------------------------------------------------------
// The handle: what a transport mounts, and what changes while it serves

/**
 * Negotiation per the spec: the client's revision when we speak it, else our newest.
 *
 * @since 0.1.0
 * @category utils
 */
export const negotiate: (requested: string) => ProtocolVersion.ProtocolVersion = SessionRecords.negotiate

/**
 * What `toHandler` builds: the handler to mount, and the per-session state behind it.
 *
 * @since 0.1.0
 * @category models
 */
export interface ServerHandle<R> {
  /** Mount this on a server transport. */
  readonly handler: Handler<R>
  /** Sessions that sent `initialize` and have not ended. */
  readonly sessions: Effect.Effect<ReadonlyArray<SessionInfo>>
  /**
   * Sends a notification to every initialized session (e.g.
   * `notifications/tools/list_changed`), and a change notification to every
   * open `subscriptions/listen` that asked for its kind. Best effort. With a
   * `Bus` service where the handle was built, it goes through the bus to
   * every instance of the fleet (see `Bus`).
   */
  readonly notifyAll: (method: string, params?: unknown) => Effect.Effect<void>
  /**
   * Ends every open `subscriptions/listen` (stateless era) with its final
   * `complete` result, and answers later ones with an error: a graceful
   * shutdown. Stream transports run it themselves when their input ends.
   */
  readonly shutdown: Effect.Effect<void>
  /**
   * The tools, resources and prompts this handler serves, changed while it
   * serves: each kind whose `listChanged` the server declares in
   * `capabilities` (see `Definitions`).
   */
  readonly definitions: Definitions<R>
}

/**
 * The kinds of entries that change, named as `DefinitionError` names them; a
 * `resourceTemplate` is named by its URI template.
 *
 * @since 0.1.0
 * @category models
 */
export type DefinitionKind = LiveCatalogue.Kind

/**
 * Changes the entries of a serving server (`ServerHandle.definitions`). A
 * kind (tools; resources with their templates; prompts) can change when the
 * server declares its `listChanged` in `capabilities` and serves it with
 * `Tool`, `Resource` or `Prompt`; such a kind is served even while empty.
 * Each change is seen whole by the next request and announced with its
 * kind's list-changed notification to every initialized session (handshake
 * era) and every `subscriptions/listen` that asked for that kind
 * (stateless era); stateless-era lists of such a kind carry `ttlMs: 0`.
 *
 * Each operation fails with a `DefinitionError` and changes nothing when it
 * cannot be done: a name already defined (`add`), a name not defined
 * (`remove`, `enable`, `disable`), or a kind that cannot change. A call
 * already running is not affected by a change.
 *
 * @since 0.1.0
 * @category models
 */
export interface Definitions<R> {
  /**
   * Adds what a definition step adds, e.g. `Tool.add("shout", {…}, handler)`;
   * several steps composed into one (`flow(Tool.add(…), Prompt.add(…))`) are
   * added together or not at all. The step's handlers may need only what
   * the server's handlers need.
   */
  readonly add: (step: (server: McpServer<never>) => McpServer<R>) => Effect.Effect<void, DefinitionError>
  /** Removes an entry: gone from its list, and unknown to new calls. */
  readonly remove: (kind: DefinitionKind, name: string) => Effect.Effect<void, DefinitionError>
  /**
   * Hides an entry: absent from its list and answered as unknown (a tool:
   * -32602; a resource: not found) until `enable`. Disabling a disabled
   * entry changes nothing and announces nothing.
   */
  readonly disable: (kind: DefinitionKind, name: string) => Effect.Effect<void, DefinitionError>
  /** Shows a disabled entry again; enabling an enabled one changes nothing. */
  readonly enable: (kind: DefinitionKind, name: string) => Effect.Effect<void, DefinitionError>
}

/**
 * Names the `input_required` ask made inside `effect` (stateless era): its
 * key in `inputRequests` and `inputResponses` is `key` instead of its
 * position among the unnamed asks (`ask-0`, `ask-1`…). For protocols or
 * clients that expect a fixed key. A key names one ask of a request: two asks
 * under one key are a defect. Ignored in the handshake era, where an ask is a
 * request to the client.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import * as McpServer from "effect-mcp-transport/server/McpServer"
 *
 * const server = McpServer.make({ serverInfo: { name: "greeter", version: "1.0.0" }, stateless: true }).pipe(
 *   McpServer.method("tools/call", {}, (_params, ctx) =>
 *     ctx.elicit({ message: "Your name?", requestedSchema: { type: "object", properties: { name: { type: "string" } } } }).pipe(
 *       McpServer.inputKey("user_name"),
 *       Effect.map((answer) => ({ content: [{ type: "text", text: `Hello, ${String(answer.content?.name)}` }] }))
 *     ))
 * )
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const inputKey = (key: string) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.provideService(effect, InputKey, key)

/**
 * Builds the handler and its per-session state, with the `definitions`
 * that change what it serves. The state lives in the caller's scope: when
 * it closes, every open `subscriptions/listen` ends (as with `shutdown`),
 * every session's `SessionState` slots are released and the sessions are
 * forgotten. Close the transports that mount the handler first (a layer
 * built after the handle is, by construction).
 *
 * @since 0.1.0
 * @category utils
 */
export const toHandler = <R>(server: McpServer<R>): Effect.Effect<ServerHandle<R>, never, Scope.Scope> =>
  Effect.flatMap(TaskRunner.forServer(server, Catalogue.of(server)), (runner) => {
    const live = LiveCatalogue.make(server)
    const built = Effect.acquireRelease(
      ServerHandler.make(live.server, capabilities(live.server), runner),
      (built) => built.release
    )
    const randomKey = server.options.stateless !== false && RequestStateKeys.resolve(server.options) === undefined
    return Effect.flatMap(built, ({ handle }) =>
      Effect.map(FleetNotify.carry(handle.notifyAll, { randomKey }), (notifyAll): ServerHandle<R> => {
      // Every instance of a fleet applies the same changes: each announces its own, to its own.
      const change = (c: LiveCatalogue.Change) =>
        Effect.flatMap(live.apply(c), (notifications) =>
          Effect.forEach(notifications, (method) => handle.notifyAll(method), { discard: true }))
      return {
        ...handle,
        notifyAll,
        definitions: {
          add: (step) => change({ _tag: "Add", step }),
          remove: (kind, name) => change({ _tag: "Remove", kind, name }),
          disable: (kind, name) => change({ _tag: "Disable", kind, name }),
          enable: (kind, name) => change({ _tag: "Enable", kind, name })
        }
      }
    }))
  })

// ---------------------------------------------------------------------------
// Serving as a layer: the handle built in the layer's scope, mounted on a
// transport and offered as the `Handle` service. Closing the layer closes
// the transport first (sessions and streams end), then the handle. The
// transports are loaded when a layer is built, so that a program importing
// `McpServer` pays only for the transport it serves on.

/**
 * A serving server's handle as a service: `sessions`, `notifyAll`,
 * `shutdown` and `definitions` (whose added entries' handlers may need only
 * what the layer already provides: none beyond it). The handler itself is
 * the transport's.
 *
 * @since 0.1.0
 * @category models
 */
export interface HandleShape extends Omit<ServerHandle<never>, "handler"> {}

/**
 * The handle of the server `layerStdio` or `layerHttp` serves.
 *
 * @since 0.1.0
 * @category services
 */
export class Handle extends Context.Service<Handle, HandleShape>()("effect-mcp-transport/McpServer/Handle") {}

/**
 * The handle, built in the layer's scope, with the transport layer made from its handler.
 */
const serving = <R, A, E, R2>(
  server: McpServer<R>,
  mount: (handle: ServerHandle<R>) => Effect.Effect<Layer.Layer<A, E, R2>>
): Layer.Layer<Handle | A, E, R2> =>
  Layer.unwrap(Effect.gen(function*() {
    const handle = yield* toHandler(server)
    const transport = yield* mount(handle)
    return Layer.merge(Layer.succeed(Handle, handle), transport)
  }))

/**
 * Serves `server` on stdin/stdout while the layer lives, with `Handle` and
 * `StdioServerTransport.StdioServer` as services. The end of stdin does not
 * end the layer: a program waits for it with the `StdioServer`'s
 * `awaitDone` (or uses `runStdio`, which does).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerStdio = <R>(
  server: McpServer<R>,
  options?: StdioServerTransport.StdioServerOptions
): Layer.Layer<
  Handle | StdioServerTransport.StdioServer,
  StdioServerTransport.StdioAlreadyServing,
  Stdio.Stdio | R
> =>
  serving(server, (handle) =>
    Effect.map(
      Effect.promise(() => import("./StdioServerTransport.ts")),
      (Stdio) => Stdio.layer(handle.handler, options)
    ))

/**
 * Serves `server` on stdin/stdout until stdin ends (replies in flight
 * written) or stdout fails, then releases the handle and completes: the
 * main effect of a stdio server.
 *
 * @since 0.1.0
 * @category utils
 */
export const runStdio = <R>(
  server: McpServer<R>,
  options?: StdioServerTransport.StdioServerOptions
): Effect.Effect<TransportClosed, StdioServerTransport.StdioAlreadyServing, Stdio.Stdio | R> =>
  Effect.scoped(Effect.gen(function*() {
    const Stdio = yield* Effect.promise(() => import("./StdioServerTransport.ts"))
    const handle = yield* toHandler(server)
    return yield* Stdio.run(handle.handler, options)
  }))

/**
 * Serves `server` on Streamable HTTP (`HttpServerTransport.layer`: bound
 * to `options.host`, default 127.0.0.1, and `options.port`, default 8421, 0
 * for any free port) while the layer lives, with `Handle`,
 * `HttpServerTransport.HttpServerTransport` (its `url`, `sessionIds`,
 * `stats`) and the `HttpServer` as services. One handle serves every session.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerHttp = <R>(
  server: McpServer<R>,
  options?: HttpServerTransport.Options
): Layer.Layer<Handle | HttpServerTransport.HttpServerTransport | HttpServer.HttpServer, ServeError, R> =>
  serving(server, (handle) =>
    Effect.map(
      Effect.promise(() => import("./HttpServerTransport.ts")),
      (Http) => Http.layer(handle.handler, options)
    ))
