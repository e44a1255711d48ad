/**
 * The example server over Streamable HTTP (and legacy SSE) on 127.0.0.1, in
 * the test process, for CLI tests that need a URL target.
 */
import { Context, Effect, Exit, Layer, Option, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import * as ExampleServer from "../../src/cli/ExampleServer.ts"
import * as HttpServerTransport from "../../src/server/HttpServerTransport.ts"
import { ensureBuilt } from "./runCli.ts"

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

/**
 * The example server for one test file: started before its first test (once
 * the build is there, since the tests run the built binary) and closed after
 * its last. Its members are read inside tests, once it has started.
 */
export const exampleHttpServer = (options: { readonly events?: string | undefined } = {}): RunningHttpServer => {
  let running: RunningHttpServer | undefined
  beforeAll(async () => {
    ensureBuilt()
    running = await startHttpServer(options)
  })
  afterAll(() => running?.close())
  const started = (): RunningHttpServer => {
    if (running === undefined) throw new Error("the example HTTP server has not started (read it inside a test)")
    return running
  }
  return {
    get url() {
      return started().url
    },
    get sseUrl() {
      return started().sseUrl
    },
    sessionIds: () => started().sessionIds(),
    close: () => started().close()
  }
}
