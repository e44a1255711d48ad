/**
 * A server as a layer: its handle built in the layer's scope, mounted on a
 * transport, and offered as the `Handle` service so that other layers and
 * the program can change its definitions, see its sessions or notify its
 * clients. Closing the layer closes the transport first (sessions and
 * streams end), then the handle (listens end, session state is released).
 * Re-exported by `McpServer`.
 *
 * The transports are loaded when a layer is built, so that a program
 * importing `McpServer` pays only for the transport it serves on.
 *
 * @since 0.2.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as HttpServer from "effect/http/HttpServer"
import type { ServeError } from "effect/http/HttpServerError"
import type * as Stdio from "effect/Stdio"
import type { TransportClosed } from "../McpError.ts"
import type * as HttpServerTransport from "./HttpServerTransport.ts"
import * as McpServer from "./McpServer.ts"
import type * as StdioServerTransport from "./StdioServerTransport.ts"

/**
 * A serving server's handle as a service: `sessions`, `notifyAll`,
 * `shutdown` and `definitions` (whose added entries' handlers may need only
 * what the layer already provides: none beyond it). The handler itself is
 * the transport's.
 *
 * @since 0.2.0
 * @category models
 */
export interface HandleShape extends Omit<McpServer.ServerHandle<never>, "handler"> {}

/**
 * The handle of the server `layerStdio` or `layerHttp` serves.
 *
 * @since 0.2.0
 * @category services
 */
export class Handle extends Context.Service<Handle, HandleShape>()("effect-mcp-transport/McpServer/Handle") {}

/**
 * The handle, built in the layer's scope, with the transport layer made from its handler.
 */
const serving = <R, A, E, R2>(
  server: McpServer.McpServer<R>,
  mount: (handle: McpServer.ServerHandle<R>) => Effect.Effect<Layer.Layer<A, E, R2>>
): Layer.Layer<Handle | A, E, R2> =>
  Layer.unwrap(Effect.gen(function*() {
    const handle = yield* McpServer.toHandler(server)
    const transport = yield* mount(handle)
    return Layer.merge(Layer.succeed(Handle, handle), transport)
  }))

/**
 * Serves `server` on stdin/stdout while the layer lives, with `Handle` and
 * `StdioServerTransport.StdioServer` as services. The end of stdin does not
 * end the layer: a program waits for it with the `StdioServer`'s
 * `awaitDone` (or uses `runStdio`, which does).
 *
 * @since 0.2.0
 * @category layers
 */
export const layerStdio = <R>(
  server: McpServer.McpServer<R>,
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
 * @since 0.2.0
 * @category utils
 */
export const runStdio = <R>(
  server: McpServer.McpServer<R>,
  options?: StdioServerTransport.StdioServerOptions
): Effect.Effect<TransportClosed, StdioServerTransport.StdioAlreadyServing, Stdio.Stdio | R> =>
  Effect.scoped(Effect.gen(function*() {
    const Stdio = yield* Effect.promise(() => import("./StdioServerTransport.ts"))
    const handle = yield* McpServer.toHandler(server)
    return yield* Stdio.run(handle.handler, options)
  }))

/**
 * Serves `server` on Streamable HTTP (`HttpServerTransport.layer`: bound
 * to `options.host`, default 127.0.0.1, and `options.port`, default 8421, 0
 * for any free port) while the layer lives, with `Handle`,
 * `HttpServerTransport.HttpServerTransport` (its `url`, `sessionIds`,
 * `stats`) and the `HttpServer` as services. One handle serves every session.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerHttp = <R>(
  server: McpServer.McpServer<R>,
  options?: HttpServerTransport.Options
): Layer.Layer<Handle | HttpServerTransport.HttpServerTransport | HttpServer.HttpServer, ServeError, R> =>
  serving(server, (handle) =>
    Effect.map(
      Effect.promise(() => import("./HttpServerTransport.ts")),
      (Http) => Http.layer(handle.handler, options)
    ))
