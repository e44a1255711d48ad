/**
 * The `Handler` a server definition is served by (`McpServer.toHandler`):
 * which era a message belongs to, the handshake itself (`initialize`,
 * `ping`, holding other requests until `notifications/initialized`), the
 * middleware around every request, and the handle's state and its end.
 *
 * The parts live beside it: `SessionRecords` (the handshake era's records),
 * `SessionEra` and `StatelessEra` (serving a request of each era).
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as JsonRpc from "../../JsonRpc.ts"
import type * as ProtocolVersion from "../../ProtocolVersion.ts"
import * as RequestMeta from "../../RequestMeta.ts"
import * as TaskWire from "../../TaskWire.ts"
import type { Handler, HandlerContext } from "../Handler.ts"
import type { RequestContext, SessionContext, SessionInfo } from "../RequestContext.ts"
import { RequestStateKey } from "../RequestStateKey.ts"
import * as Router from "../Router.ts"
import { type SessionRecord, SessionRegistry } from "../SessionRegistry.ts"
import * as AdoptedSession from "./AdoptedSession.ts"
import { info, LiveSessionContext } from "./HandlerContexts.ts"
import * as MiddlewareChain from "./MiddlewareChain.ts"
import type * as MiddlewareShape from "./MiddlewareShape.ts"
import * as RequestStateKeys from "./RequestStateKeys.ts"
import type { McpServerOptions } from "./ServerOptions.ts"
import * as ServerSpans from "./ServerSpans.ts"
import * as SessionEra from "./SessionEra.ts"
import * as SessionRecords from "./SessionRecords.ts"
import * as StatelessEra from "./StatelessEra.ts"
import * as Subscriptions from "./Subscriptions.ts"
import * as TaskRunner from "./TaskRunner.ts"

/** The default `notInitializedCode`: -32002, the code most MCP clients expect for a request sent before initialization. */
export const DEFAULT_NOT_INITIALIZED_CODE = -32002

/** What the handler serves: a server definition (`McpServer`), as the live catalogue shows it. */
export interface Served<R> {
  readonly options: McpServerOptions
  readonly router: Router.Router<RequestContext, R>
  readonly notificationRouter: Router.Router<SessionContext, R>
  readonly middleware: ReadonlyArray<MiddlewareShape.Middleware<any, any>>
}

/** The handle `toHandler` completes with its `definitions` (see `McpServer.ServerHandle`). */
export interface Handle<R> {
  readonly handler: Handler<R>
  readonly sessions: Effect.Effect<ReadonlyArray<SessionInfo>>
  /**
   * With `deliveryId` (the fleet's one id of this notification): a session
   * the fleet's registry knows gets it from the one instance that claims it.
   */
  readonly notifyAll: (method: string, params?: unknown, deliveryId?: string) => Effect.Effect<void>
  readonly shutdown: Effect.Effect<void>
}

/**
 * Builds the handler of `server`, declaring `capabilities` (the tasks
 * extension added when `runner` runs tasks), and what ends its state.
 */
export const make = <R>(
  server: Served<R>,
  capabilities: Record<string, unknown>,
  runner: TaskRunner.Runner | undefined
): Effect.Effect<{ readonly handle: Handle<R>; readonly release: Effect.Effect<void> }> =>
  Effect.flatMap(Effect.serviceOption(SessionRegistry), (registry) => Effect.map(RequestStateKey, (defaultKeys) => {
    const options = server.options
    const stateless = options.stateless !== false
    const declared = runner === undefined ? capabilities : TaskRunner.withExtension(capabilities)
    const enforce = options.enforceInitialized ?? true
    const notInitializedCode = options.notInitializedCode ?? DEFAULT_NOT_INITIALIZED_CODE
    const timeoutMs = options.clientRequestTimeout === undefined ? 60_000 : Duration.toMillis(options.clientRequestTimeout)
    const explicitGrace = options.initializedGracePeriod === undefined
      ? undefined
      : Duration.fromInputUnsafe(options.initializedGracePeriod)
    const graceFor = (sessionId: string | undefined): Duration.Duration =>
      explicitGrace ?? (sessionId === undefined ? Duration.zero : Duration.seconds(1))
    const records = SessionRecords.makeMemory()
    const stores = records.stores
    const subscriptions = Subscriptions.make()
    const statelessEra = StatelessEra.make({
      options,
      router: server.router,
      runner,
      declared,
      subscriptions,
      stores,
      timeoutMs,
      stateKeys: RequestStateKeys.resolve(options) ?? RequestStateKeys.provided(defaultKeys)
    })
    const serve = SessionEra.make({ router: server.router, runner, stores, timeoutMs })

    const initializeResult = (version: ProtocolVersion.ProtocolVersion) => {
      const result: Record<string, unknown> = {
        protocolVersion: version,
        capabilities: runner !== undefined && version === TaskWire.CORE_TASKS_VERSION
          ? { ...declared, tasks: TaskWire.coreCapability(runner.store.list !== undefined) }
          : declared,
        serverInfo: options.serverInfo
      }
      if (options.instructions !== undefined) result.instructions = options.instructions
      return result
    }

    /** `initialize`: the negotiated revision, and the record it starts unless the POST has no session. */
    const initialize = (request: JsonRpc.JsonRpcRequest, hctx: HandlerContext) =>
      SessionRecords.decodeInitialize(request.params ?? {}).pipe(
        Effect.match({
          onFailure: (e) => Router.invalidParams(request.id, e),
          onSuccess: (p) => {
            const version = SessionRecords.negotiate(p.protocolVersion)
            // A repeated initialize starts the session over.
            if (hctx.ephemeral !== true) records.set(hctx.sessionId, SessionRecords.initializing(p, version))
            return JsonRpc.success(request.id, initializeResult(version))
          }
        })
      )

    const onRequest = (
      request: JsonRpc.JsonRpcRequest,
      hctx: HandlerContext
    ): Effect.Effect<JsonRpc.JsonRpcResponse, never, R> => {
      // A request carrying the stateless era's metadata is served on its own;
      // `initialize` always starts a handshake-era session.
      if (stateless && request.method !== "initialize") {
        const read = RequestMeta.readMeta(request.params)
        if (read._tag !== "Absent") return statelessEra.serve(request, hctx, read)
      }
      switch (request.method) {
        case "initialize":
          return initialize(request, hctx)
        case "ping":
          return Effect.succeed(JsonRpc.success(request.id, {}))
      }
      // A sessionless POST of the handshake era: no connection to keep a record for, and other
      // clients' POSTs come the same way, so it is served as initialized, nothing known of its client.
      if (hctx.ephemeral === true) return serve(request, hctx, SessionRecords.anonymous())
      const known = records.get(hctx.sessionId)
      if (enforce && known?.phase !== "ready") {
        const reject = Effect.succeed(
          JsonRpc.failure(
            request.id,
            notInitializedCode,
            known === undefined
              ? "Server not initialized: send initialize first"
              : "Server not initialized: send notifications/initialized first",
            { method: request.method }
          )
        )
        const grace = graceFor(hctx.sessionId)
        if (known === undefined || Duration.isZero(grace)) return reject
        return Deferred.await(known.initialized).pipe(
          Effect.timeoutOption(grace),
          Effect.flatMap((o) => (o._tag === "Some" ? serve(request, hctx, known) : reject))
        )
      }
      // Without enforcement a request may come with no session at all (stateless HTTP).
      return serve(request, hctx, known ?? SessionRecords.anonymous())
    }

    const onNotification = (
      n: JsonRpc.JsonRpcNotification,
      hctx: HandlerContext
    ): Effect.Effect<null, never, R> => {
      if (hctx.ephemeral === true) {
        const ctx = new LiveSessionContext(hctx, SessionRecords.anonymous(), stores)
        return Effect.as(ctx.releasing(Router.dispatchNotification(server.notificationRouter, n, ctx)), null)
      }
      const session = records.get(hctx.sessionId)
      if (session === undefined) return Effect.succeed(null)
      if (n.method === "notifications/initialized") SessionRecords.initialized(session, hctx)
      return Effect.as(
        Router.dispatchNotification(server.notificationRouter, n, new LiveSessionContext(hctx, session, stores)),
        null
      )
    }

    const composed = MiddlewareChain.compose(
      server.middleware,
      stateless,
      onRequest,
      (hctx) => records.get(hctx.sessionId)?.protocolVersion
    )
    const serveRequest: typeof composed = runner === undefined
      ? composed
      : (message, hctx) => Effect.provideService(composed(message, hctx), TaskRunner.CurrentRunner, runner)
    const handler: Handler<R> = Object.assign(
      (message: JsonRpc.JsonRpcRequest | JsonRpc.JsonRpcNotification, hctx: HandlerContext) =>
        "id" in message
          ? serveRequest(message, hctx)
          : ServerSpans.notification(message, hctx.sessionId, onNotification(message, hctx)),
      {
        shutdown: subscriptions.endAll,
        sessionEnded: records.end,
        adoptSession: (sessionId: string, record: SessionRecord, channel: HandlerContext) =>
          Effect.sync(() => AdoptedSession.adopt(records, sessionId, record, channel)),
        stateless,
        ...(stateless && server.router.requests.has("tools/list") ? { toolInputSchema: statelessEra.toolInputSchema } : {})
      }
    )

    // The end of the handle's scope: listens get their final result, then every session's slots go.
    const release = Effect.andThen(subscriptions.endAll, records.clear)

    const handle: Handle<R> = {
      handler,
      sessions: Effect.sync(() => records.list().map(([sessionId, session]) => info(sessionId, session))),
      notifyAll: (method, params, deliveryId) =>
        Effect.sync(() => {
          if (method === "notifications/tools/list_changed") statelessEra.toolsChanged()
        }).pipe(Effect.andThen(Effect.forEach(
          records.list(),
          ([sessionId, s]) => {
            const channel = s.channel
            if (s.phase !== "ready" || channel === undefined) return Effect.void
            const deliver = Effect.ignore(channel.notify(method, params))
            const claim = Option.isSome(registry) ? registry.value.claimDelivery : undefined
            // Copies of a session on several instances write one stream: one of them delivers. The
            // registry unreachable: delivered (a notification twice rather than none).
            return deliveryId === undefined || claim === undefined || sessionId === undefined ? deliver : Effect.flatMap(
              Effect.orElseSucceed(claim(sessionId, deliveryId), () => true),
              (mine) => mine ? deliver : Effect.void
            )
          },
          { discard: true }
        ).pipe(Effect.andThen(subscriptions.publish(method, params))))),
      shutdown: subscriptions.endAll
    }
    return { handle, release }
  }))
