/**
 * The program's `HttpClient`: undici (through `NodeHttpClient.layerUndici`,
 * which leaves timeouts to the caller and keeps idle SSE streams open), but
 * loaded at the first request. A command that never speaks HTTP (a stdio
 * target, `serve --stdio`, `--help`) does not load it at all.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as HttpClient from "effect/http/HttpClient"
import type * as HttpClientError from "effect/http/HttpClientError"
import type * as HttpClientRequest from "effect/http/HttpClientRequest"

export const layer: Layer.Layer<HttpClient.HttpClient> = Layer.effect(HttpClient.HttpClient)(
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    // Built once, in the program's scope, so the undici agent is closed when the program ends.
    const undici = yield* Effect.cached(
      Effect.promise(() => import("@effect/platform-node/NodeHttpClient")).pipe(
        Effect.flatMap((NodeHttpClient) => Layer.buildWithScope(NodeHttpClient.layerUndici, scope)),
        Effect.map(Context.get(HttpClient.HttpClient))
      )
    )
    return HttpClient.makeWith(
      (request: Effect.Effect<HttpClientRequest.HttpClientRequest, HttpClientError.HttpClientError>) =>
        Effect.flatMap(undici, (client) => client.postprocess(request)),
      Effect.succeed
    )
  })
)
