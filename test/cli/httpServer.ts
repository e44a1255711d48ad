/**
 * The example server over Streamable HTTP (and legacy SSE) on 127.0.0.1, in
 * the test process, for CLI tests that need a URL target.
 */
import { Context, Effect, Exit, Layer, Option, Scope } from "effect"
import * as ExampleServer from "../../src/cli/ExampleServer.ts"
import * as HttpServerTransport from "../../src/server/HttpServerTransport.ts"

export interface RunningHttpServer {
  /** The Streamable HTTP endpoint, e.g. http://127.0.0.1:PORT/mcp. */
  readonly url: string
  /** The legacy HTTP+SSE endpoint, e.g. http://127.0.0.1:PORT/sse. */
  readonly sseUrl: string
  readonly sessionIds: () => Promise<ReadonlyArray<string>>
  readonly close: () => Promise<void>
}

export const startHttpServer = async (options: { readonly events?: string | undefined } = {}): Promise<RunningHttpServer> => {
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(
    Layer.buildWithScope(ExampleServer.layerHttp({ port: 0, events: options.events }), scope)
  )
  const transport = Context.get(context, HttpServerTransport.HttpServerTransport)
  const url = Option.getOrThrow(transport.url)
  return {
    url,
    sseUrl: url.replace(/\/mcp$/, "/sse"),
    sessionIds: () => Effect.runPromise(transport.sessionIds),
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}
