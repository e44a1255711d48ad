/**
 * The program's `HttpClient`, chosen for the command line, and loaded only
 * at the first request (a stdio target, `serve`, `--help` load neither).
 *
 * - Node's `fetch` for the client commands: it is what loads fastest (Node
 *   bundles it; undici from npm is some hundred modules more). Its one limit
 *   is Node's: a response stream silent for 5 minutes (undici's default body
 *   timeout) is ended.
 * - undici (`NodeHttpClient.layerUndici`, which leaves every timeout to the
 *   caller) for `bridge`, whose streams stay open for as long as it runs, and
 *   for a command whose `--timeout` or `--login-timeout` is longer than that.
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as HttpClient from "effect/http/HttpClient"
import type * as HttpClientError from "effect/http/HttpClientError"
import type * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as Durations from "./Durations.ts"

/** How long Node's fetch lets a response stream stay silent (undici's `bodyTimeout` default). */
export const FETCH_SILENCE_LIMIT = Duration.minutes(5)

const TIMEOUT_FLAGS = new Set(["--timeout", "--login-timeout"])

/** Whether the command line needs undici: `bridge`, or a timeout fetch would cut short. */
export const needsUndici = (subcommand: string | undefined, words: ReadonlyArray<string>): boolean => {
  if (subcommand === "bridge") return true
  return words.some((word, i) => {
    const eq = word.indexOf("=")
    const name = eq === -1 ? word : word.slice(0, eq)
    if (!TIMEOUT_FLAGS.has(name)) return false
    const value = eq === -1 ? words[i + 1] : word.slice(eq + 1)
    return value !== undefined &&
      Option.exists(Durations.parse(value), (d) => Duration.isGreaterThanOrEqualTo(d, FETCH_SILENCE_LIMIT))
  })
}

const lazily = (
  load: () => Promise<Layer.Layer<HttpClient.HttpClient>>
): Layer.Layer<HttpClient.HttpClient> =>
  Layer.effect(HttpClient.HttpClient)(
    Effect.gen(function*() {
      const scope = yield* Effect.scope
      // Built once, in the program's scope, so an undici agent is closed when the program ends.
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

/** The client for this command line (see the module's comment). */
export const layerFor = (subcommand: string | undefined, words: ReadonlyArray<string>): Layer.Layer<HttpClient.HttpClient> =>
  needsUndici(subcommand, words)
    ? lazily(() => import("@effect/platform-node/NodeHttpClient").then((m) => m.layerUndici))
    : lazily(() => import("effect/http/FetchHttpClient").then((m) => m.layer))
