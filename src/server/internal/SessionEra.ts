/**
 * Serving a request of the handshake era, given its session's record: the
 * method table, `logging/setLevel`, and the tasks extension's methods
 * (`tasks/*`; with a 2025-11-25 session also that revision's task methods,
 * and `tools/call` told what its `params.task` asks).
 */
import * as Effect from "effect/Effect"
import * as JsonRpc from "../../JsonRpc.ts"
import * as TaskWire from "../../TaskWire.ts"
import type { HandlerContext } from "../Handler.ts"
import type { RequestContext } from "../RequestContext.ts"
import * as Router from "../Router.ts"
import { LiveRequestContext, type Session, type Stores } from "./HandlerContexts.ts"
import * as ServerSpans from "./ServerSpans.ts"
import { decodeSetLevel } from "./SessionRecords.ts"
import * as TaskMethods from "./TaskMethods.ts"
import * as TaskMethods2025 from "./TaskMethods2025.ts"
import * as TaskRunner from "./TaskRunner.ts"

export interface Config<R> {
  readonly router: Router.Router<RequestContext, R>
  readonly runner: TaskRunner.Runner | undefined
  readonly stores: Stores
  /** Timeout of the requests a handler sends the client. */
  readonly timeoutMs: number
}

export type Serve<R> = (
  request: JsonRpc.JsonRpcRequest,
  hctx: HandlerContext,
  session: Session
) => Effect.Effect<JsonRpc.JsonRpcResponse, never, R>

export const make = <R>({ router, runner, stores, timeoutMs }: Config<R>): Serve<R> => {
  /** A session of the 2025-11-25 tasks: their methods, and `tools/call` told what `params.task` asks. */
  const serveInSession: Serve<R> = (request, hctx, session) => {
    if (runner === undefined || !TaskMethods2025.speaks(session)) return serveSession(request, hctx, session)
    if (TaskMethods2025.handles(request.method)) return TaskMethods2025.serve(runner, request, hctx)
    return request.method === "tools/call"
      ? Effect.provideService(
        serveSession(request, hctx, session),
        TaskMethods2025.CurrentAugmentation,
        TaskMethods2025.augmentationOf(request.params)
      )
      : serveSession(request, hctx, session)
  }

  const serveSession: Serve<R> = (request, hctx, session) => {
    if (runner !== undefined && TaskMethods.handles(request.method)) {
      return TaskMethods.serve(
        runner,
        request,
        TaskWire.declares(session.clientCapabilities),
        TaskRunner.ownerKey(hctx.principal, hctx.ephemeral === true ? undefined : hctx.sessionId)
      )
    }
    const ctx = new LiveRequestContext(request, hctx, session, stores, timeoutMs)
    if (request.method === "logging/setLevel") {
      return decodeSetLevel(request.params ?? {}).pipe(
        Effect.matchEffect({
          onFailure: (e) => Effect.succeed<JsonRpc.JsonRpcResponse>(Router.invalidParams(request.id, e)),
          onSuccess: (p) => {
            session.logLevel = p.level
            return router.requests.has(request.method)
              ? ctx.releasing(Router.dispatch(router, request, ctx))
              : Effect.succeed(JsonRpc.success(request.id, {}))
          }
        })
      )
    }
    return ctx.releasing(Router.dispatch(router, request, ctx))
  }

  // With no span to record the revision on (the transport knows), no step to look for one.
  return (request, hctx, session) =>
    hctx.observed === false
      ? serveInSession(request, hctx, session)
      : ServerSpans.withProtocolVersion(session.protocolVersion, serveInSession(request, hctx, session))
}
