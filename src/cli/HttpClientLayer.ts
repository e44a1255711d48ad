/**
 * The program's `HttpClient`, loaded only at the first request (a stdio
 * target, `serve`, `--help` load none):
 *
 * - `node:http` (`NodeHttpClient.layerNodeHttp`) for the client commands: it
 *   is what loads fastest. undici from npm is some hundred modules more, and
 *   Node's `fetch` compiles its bundled undici on first use; neither is needed
 *   for a few requests. Like undici here, it leaves every timeout to the
 *   caller, so a long silent response stream is not cut short.
 * - undici (`NodeHttpClient.layerUndici`) for `bridge`, as before.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as HttpClient from "effect/http/HttpClient"
import type * as HttpClientError from "effect/http/HttpClientError"
import type * as HttpClientRequest from "effect/http/HttpClientRequest"

/** Which client a subcommand gets. */
export const clientFor = (subcommand: string | undefined): "undici" | "node:http" =>
  subcommand === "bridge" ? "undici" : "node:http"

const lazily = (
  load: () => Promise<Layer.Layer<HttpClient.HttpClient>>
): Layer.Layer<HttpClient.HttpClient> =>
  Layer.effect(HttpClient.HttpClient)(
    Effect.gen(function*() {
      const scope = yield* Effect.scope
      // Built once, in the program's scope, so its agent is closed when the program ends.
      const client = yield* Effect.cached(
        Effect.promise(load).pipe(
          Effect.flatMap((layer) => Layer.buildWithScope(layer, scope)),
          Effect.map(Context.get(HttpClient.HttpClient))
        )
      )
      return HttpClient.makeWith(
        (request: Effect.Effect<HttpClientRequest.HttpClientRequest, HttpClientError.HttpClientError>) =>
          Effect.flatMap(client, (c) => c.postprocess(request)),
        Effect.succeed
      )
    })
  )

/** The client for a subcommand (see the module's comment). */
export const layerFor = (subcommand: string | undefined): Layer.Layer<HttpClient.HttpClient> =>
  lazily(() =>
    import("@effect/platform-node/NodeHttpClient").then((m) =>
      clientFor(subcommand) === "undici" ? m.layerUndici : m.layerNodeHttp
    )
  )
