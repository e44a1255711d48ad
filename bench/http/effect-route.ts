/**
 * How the bench's bare `effect/http` servers run: their routes on a
 * loopback `NodeHttpServer` (any free port, no request log) until the
 * process ends, the URL announced once it listens.
 */
import { createServer } from "node:http"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { HttpRouter, HttpServer } from "effect/http"
import { announce } from "./common.ts"

/** Serves `routes`; `onPort` runs with the bound port before the URL is announced. */
export const runRoutes = (
  routes: Layer.Layer<never, never, HttpRouter.HttpRouter>,
  onPort: (port: number) => void = () => {}
): void => {
  const served = HttpRouter.serve(routes, { disableLogger: true, disableListenLog: true })
  const announced = Layer.effectDiscard(Effect.gen(function*() {
    const address = (yield* HttpServer.HttpServer).address
    if (address._tag === "UnixPathAddress") return
    onPort(address.port)
    announce(`http://127.0.0.1:${address.port}/mcp`)
  }))
  NodeRuntime.runMain(Layer.launch(Layer.provideMerge(announced, served).pipe(
    Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { host: "127.0.0.1", port: 0 }))
  )))
}
