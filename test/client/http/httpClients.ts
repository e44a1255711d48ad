/**
 * The two `HttpClient` implementations every HTTP client test runs against
 * (`describe.each(httpClients)`), and a live, scoped test bound to one of them.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { it } from "@effect/vitest"
import { Effect, type Layer, type Scope } from "effect"
import { FetchHttpClient, type HttpClient } from "effect/http"

export const httpClients = [
  ["FetchHttpClient.layer", FetchHttpClient.layer],
  ["NodeHttpClient.layerUndici", NodeHttpClient.layerUndici]
] as const satisfies ReadonlyArray<readonly [string, Layer.Layer<HttpClient.HttpClient>]>

/** `it.live` running `body` in a scope with `clientLayer`, each test bounded by `timeout` unless it says otherwise. */
export const liveWith = (clientLayer: Layer.Layer<HttpClient.HttpClient>, timeout: number) =>
(
  name: string,
  body: () => Effect.Effect<void, unknown, Scope.Scope | HttpClient.HttpClient>,
  testTimeout = timeout
) => it.live(name, () => Effect.scoped(body()).pipe(Effect.provide(clientLayer)), testTimeout)
