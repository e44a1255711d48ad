/**
 * `effect-mcp-transport serve [--stdio | --http [--port 8421] [--host 127.0.0.1] [--metrics] [--redis URL]] [--eras both|modern|legacy] [--grace 10s]`:
 * runs the example server (ExampleServer.ts) on our server transports.
 *
 * - `--eras` (default `both`): the stateless era (2026-07-28) next to the
 *   initialize handshake (2024-11-05 to 2025-11-25) on either transport, or
 *   one of them alone. At start it says which on stderr, with the URL for
 *   `--http` (`serving stdio (eras: …)`, `listening URL (eras: …)`).
 * - `--stdio` (the default): frames on stdin/stdout and nothing else on
 *   stdout; ends with exit 0 when stdin ends.
 * - `--http`: Streamable HTTP at `http://HOST:PORT/mcp` (plus legacy SSE and
 *   the broadcast events and health endpoints); once the port is bound it prints
 *   `listening http://HOST:PORT/mcp (eras: …)` on stderr (with `--json`, a JSON
 *   document `{"transport":"http","url":…,"eras":…}` on stdout instead). `--port 0`
 *   picks a free port.
 * - `--metrics` (with `--http`): a Prometheus scrape endpoint at
 *   `http://HOST:PORT/metrics` with the server's `mcp.*` metrics.
 * - `--http --redis URL [--redis-prefix P]`: one instance of a fleet that
 *   shares the Redis at URL (notifications and broadcasts reach every
 *   instance, resumable streams are kept in Redis; see docs/scale-out.md).
 *   Serving the stateless era it needs the request-state keys every instance
 *   shares, current first, comma-separated, in `MCP_REQUEST_STATE_KEYS`
 *   (an environment variable: a key on the command line is visible to
 *   every user of the machine). Redis unreachable at start: exit 3. After
 *   the listening line it prints `health URL/health (store: redis)` (with
 *   `--json`, a `health` field): `{"status":"ok","store":{"kind":"redis","connected":true}}`,
 *   or 503 with `unavailable` while Redis cannot be reached, `draining` while
 *   shutting down.
 *
 * SIGINT or SIGTERM stop either mode cleanly. Over HTTP the server drains
 * first: new requests get 503 with `Retry-After`, streams end, running calls
 * may finish for up to `--grace` (10 seconds; then they are interrupted and
 * their clients told so); sessions end, the listener closes, then the
 * process exits with 130 (the runtime's code for an interrupted program).
 * Over stdio `--grace` is how long running calls may finish after stdin ends.
 */
import * as Data from "effect/Data"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Command, Flag } from "effect/cli"
import * as HttpServerTransport from "../../server/HttpServerTransport.ts"
import * as Durations from "../Durations.ts"
import * as Eras from "../Eras.ts"
import * as ExampleServer from "../ExampleServer.ts"
import * as ListenFlags from "../ListenFlags.ts"
import * as Output from "../Output.ts"

export const { DEFAULT_HOST, DEFAULT_PORT } = ListenFlags

/** The environment variable holding the request-state keys a fleet shares, current first, comma-separated. */
export const KEYS_ENV = "MCP_REQUEST_STATE_KEYS"

interface Fleet {
  readonly url: string
  readonly prefix: string | undefined
}

interface HttpServing {
  readonly host: string
  readonly port: number
  readonly eras: Eras.Eras
  readonly metrics: boolean
  readonly fleet: Fleet | undefined
  readonly shutdownGracePeriod: Duration.Duration
}

const serveHttp = ({ eras, fleet, host, metrics, port, shutdownGracePeriod }: HttpServing) =>
  Effect.gen(function*() {
    const json = yield* Output.Json
    const announce = Layer.effectDiscard(Effect.gen(function*() {
      const transport = yield* HttpServerTransport.HttpServerTransport
      const url = Option.getOrElse(transport.url, () => `http://${host}:${port}/mcp`)
      if (fleet === undefined) {
        return yield* json ? Output.json({ transport: "http", url, eras }) : Output.note(`listening ${url} (eras: ${Eras.describe(eras)})`)
      }
      // An instance of a fleet: where its health (the Redis connection's state, draining) is read.
      const health = `${url}/health`
      yield* json
        ? Output.json({ transport: "http", url, eras, health })
        : Effect.andThen(
          Output.note(`listening ${url} (eras: ${Eras.describe(eras)})`),
          Output.note(`health ${health} (store: redis)`)
        )
    }))
    const keys = (process.env[KEYS_ENV] ?? "").split(",").filter((k) => k !== "")
    if (fleet !== undefined && keys.length === 0 && Eras.servesModern(eras)) {
      return yield* new Output.UsageError({
        message: `--redis serving the stateless era needs ${KEYS_ENV}: the request-state keys every instance shares, current first, comma-separated, each at least 32 bytes`
      })
    }
    const served = ExampleServer.layerHttp({
      host,
      port,
      eras,
      metrics,
      shutdownGracePeriod,
      ...(keys.length === 0 ? {} : { requestStateKeys: keys })
    })
    const instance = fleet === undefined ? served : Layer.unwrap(Effect.map(
      // Loaded only with --redis: a plain server does not load the Redis client.
      Effect.promise(() => import("../../server/RedisFleet.ts")),
      (RedisFleet) => served.pipe(Layer.provide(RedisFleet.layer({ url: fleet.url, prefix: fleet.prefix })))
    ))
    return yield* Layer.launch(announce.pipe(Layer.provideMerge(instance))).pipe(
      Effect.catchTag("ServeError", (e) => Effect.fail(new ListenError({ host, port, cause: e.cause }))),
      Effect.catchTag("RedisError", (e) => Effect.fail(new Output.ConnectError({ target: fleet?.url ?? "Redis", cause: e.cause })))
    )
  })

/** The port could not be bound (taken, no permission, no such interface). */
export class ListenError extends Data.TaggedError("ListenError")<{
  readonly host: string
  readonly port: number
  readonly cause: unknown
}> {
  override get message(): string {
    const reason = this.cause instanceof Error ? this.cause.message : String(this.cause)
    return `cannot listen on ${this.host}:${this.port}: ${reason}`
  }
}

export const command = Command.make(
  "serve",
  {
    stdio: Flag.Boolean("stdio").pipe(
      Flag.withDescription("Serve on stdin/stdout (the default)"),
      Flag.withDefault(false)
    ),
    http: Flag.Boolean("http").pipe(
      Flag.withDescription("Serve Streamable HTTP (and legacy SSE) instead of stdio"),
      Flag.withDefault(false)
    ),
    port: ListenFlags.port,
    host: ListenFlags.host,
    metrics: Flag.Boolean("metrics").pipe(
      Flag.withDescription("With --http: serve Prometheus metrics at /metrics"),
      Flag.withDefault(false)
    ),
    redis: Flag.String("redis").pipe(
      Flag.withDescription(`With --http: one instance of a fleet sharing this Redis (redis://host:port); keys in ${KEYS_ENV}`),
      Flag.optional
    ),
    redisPrefix: Flag.String("redis-prefix").pipe(
      Flag.withDescription("With --redis: the prefix of every key and channel, one per fleet. Default mcp:"),
      Flag.optional
    ),
    eras: Eras.flag,
    grace: Durations.flag(
      "grace",
      "10s",
      "How long running calls may still finish once the server is told to stop (--http: SIGINT or SIGTERM; --stdio: the end of stdin)"
    )
  },
  ({ eras, grace, host, http, metrics, port, redis, redisPrefix, stdio }) =>
    Output.run(Effect.gen(function*() {
      if (http && stdio) return yield* new Output.UsageError({ message: "give either --stdio or --http, not both" })
      if (!http) {
        if (Option.isSome(port) || Option.isSome(host) || Option.isSome(redis)) {
          return yield* new Output.UsageError({ message: "--port, --host and --redis need --http" })
        }
        if (metrics) return yield* new Output.UsageError({ message: "--metrics needs --http" })
        yield* Output.note(`serving stdio (eras: ${Eras.describe(eras)})`)
        yield* ExampleServer.runStdio({ eras, shutdownGracePeriod: grace })
        return
      }
      if (Option.isNone(redis) && Option.isSome(redisPrefix)) {
        return yield* new Output.UsageError({ message: "--redis-prefix needs --redis" })
      }
      const fleet = Option.isSome(redis) ? { url: redis.value, prefix: Option.getOrUndefined(redisPrefix) } : undefined
      return yield* serveHttp({
        host: Option.getOrElse(host, () => DEFAULT_HOST),
        port: Option.getOrElse(port, () => DEFAULT_PORT),
        eras,
        metrics,
        fleet,
        shutdownGracePeriod: grace
      })
    }))
).pipe(Command.withDescription(
  "Run the example MCP server (echo, add, countdown) over stdio or Streamable HTTP, in both protocol eras unless --eras says otherwise"
))
