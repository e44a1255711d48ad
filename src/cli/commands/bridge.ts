/**
 * `effect-mcp-transport bridge`: exposes any MCP server over the other transport.
 *
 * - `bridge --http [--port 8421] [--host 127.0.0.1] -- <command…>`: the
 *   stdio server as Streamable HTTP (and legacy SSE) at
 *   `http://HOST:PORT/mcp`; each HTTP session gets its own child process,
 *   killed when the session ends. Once the port is bound it prints
 *   `listening <url>` on stderr (with `--json`, `{"transport":"http","url":…,"target":…}`
 *   on stdout). Runs until SIGINT/SIGTERM (exit 130 after teardown).
 * - `bridge <url> --stdio`: the remote server on stdin/stdout, nothing but
 *   frames on stdout. Ends with 0 when stdin ends, or with 3 and one line on
 *   stderr when the upstream connection closes.
 *
 * Either target works with either side (a URL over HTTP is a plain proxy);
 * those two are what the command is for.
 *
 * The HTTP side runs at most `--max-upstreams` upstream connections (child
 * processes) at once, default 16; a session past it gets 503 with
 * `Retry-After`. `--auth-issuer` with `--auth-jwks` or `--auth-introspection`
 * makes it an OAuth protected resource: no process starts for a request
 * without a valid bearer token.
 *
 * `--front-era` picks how protocol eras cross: `auto` (default) serves each
 * client in its own era, as it is when the server speaks it and converted
 * when not; `passthrough` forwards both eras as they are, never converting;
 * `stateless` serves a handshake-era server to clients of 2026-07-28 (from
 * `--upstream-pool N` upstream connections, default 1), `handshake` serves a
 * stateless-era server to clients of the handshake.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Argument, Command, Flag } from "effect/cli"
import * as Bridge from "../../bridge/Bridge.ts"
import * as UpstreamSlots from "../../bridge/UpstreamSlots.ts"
import type * as ProtectedResource from "../../server/auth/ProtectedResource.ts"
import * as HttpServerTransport from "../../server/HttpServerTransport.ts"
import * as ListenFlags from "../ListenFlags.ts"
import * as Output from "../Output.ts"
import * as ProtectedResourceFlags from "../ProtectedResourceFlags.ts"
import * as ServerFlags from "../ServerFlags.ts"
import * as Target from "../Target.ts"

export const { DEFAULT_HOST, DEFAULT_PORT } = ListenFlags

const connectTo = (target: Target.Target, connection: ServerFlags.Connection) =>
  Target.connect(target, { listen: true, headers: connection.headers, auth: connection.auth, env: connection.env, cwd: connection.cwd })

/** What `--front-era` and `--upstream-pool` add to the bridge's options. */
interface EraFlags {
  readonly front: "auto" | "passthrough" | "stateless" | "handshake"
  readonly upstreamPool: number | undefined
}

const optionsFor = (target: Target.Target, connection: ServerFlags.Connection, eras: EraFlags) => ({
  connect: connectTo(target, connection),
  front: eras.front,
  upstreamPool: eras.upstreamPool
})

/** What the HTTP side admits: `--max-upstreams` and the `--auth-*` flags. */
interface Admission {
  readonly maxUpstreams: number | undefined
  readonly authorization: ProtectedResource.Options | undefined
}

const serveHttp = (
  target: Target.Target,
  connection: ServerFlags.Connection,
  host: string,
  port: number,
  eras: EraFlags,
  admission: Admission
) =>
  Effect.gen(function*() {
    const json = yield* Output.Json
    const announce = Layer.effectDiscard(Effect.gen(function*() {
      const transport = yield* HttpServerTransport.HttpServerTransport
      const url = Option.getOrElse(transport.url, () => `http://${host}:${port}/mcp`)
      yield* json
        ? Output.json({ transport: "http", url, target: Target.describe(target) })
        : Output.note(`listening ${url} (bridging ${Target.describe(target)})`)
    }))
    return yield* Layer.launch(
      announce.pipe(Layer.provideMerge(Bridge.layerHttp(
        { ...optionsFor(target, connection, eras), maxUpstreams: admission.maxUpstreams },
        { host, port, authorization: admission.authorization }
      )))
    )
  })

const serveStdio = (target: Target.Target, connection: ServerFlags.Connection, eras: EraFlags) =>
  Effect.gen(function*() {
    const end = yield* Bridge.runStdio(optionsFor(target, connection, eras)).pipe(
      Effect.catchTag("UpstreamUnavailable", (error) => Effect.fail(error.cause)),
      Output.connecting(Target.describe(target))
    )
    if (end.side === "upstream") {
      yield* Output.printError(end.reason, yield* Output.Verbose)
      return yield* new Output.Exit({ code: Output.ExitCode.Connect })
    }
  })

export const command = Command.make(
  "bridge",
  {
    url: Argument.String("url").pipe(
      Argument.withDescription("Streamable HTTP (or legacy SSE) URL to expose over stdio; or give a stdio server's command after --"),
      Argument.optional
    ),
    http: Flag.Boolean("http").pipe(
      Flag.withDescription("Expose the server over Streamable HTTP (and legacy SSE)"),
      Flag.withDefault(false)
    ),
    stdio: Flag.Boolean("stdio").pipe(
      Flag.withDescription("Expose the server on stdin/stdout"),
      Flag.withDefault(false)
    ),
    port: ListenFlags.port,
    host: ListenFlags.host,
    frontEra: Flag.Literals("front-era", ["auto", "passthrough", "stateless", "handshake"]).pipe(
      Flag.withDescription(
        "auto (default): each client in its own era, converted when the server does not speak it; passthrough: both eras as they are, never converted; stateless: serve a handshake-era server to 2026-07-28 clients; handshake: serve a stateless-era server to handshake-era clients"
      ),
      Flag.withDefault("auto" as const)
    ),
    upstreamPool: Flag.Int("upstream-pool").pipe(
      Flag.withDescription("With --front-era stateless: upstream connections (processes) serving the requests. Default 1"),
      Flag.filter((n) => n >= 1 && n <= 256, (n) => `expected a pool size between 1 and 256, got ${n}`),
      Flag.optional
    ),
    maxUpstreams: Flag.Int("max-upstreams").pipe(
      Flag.withDescription(
        `With --http: upstream connections (child processes) at once, one per session; a session past it gets 503. Default ${UpstreamSlots.DEFAULT_MAX_UPSTREAMS}`
      ),
      Flag.filter((n) => n >= 1 && n <= 10_000, (n) => `expected a number of upstreams between 1 and 10000, got ${n}`),
      Flag.optional
    ),
    authorization: ProtectedResourceFlags.flags,
    connection: ServerFlags.flags
  },
  ({ authorization, connection, frontEra, host, http, maxUpstreams, port, stdio, upstreamPool, url }) =>
    Output.run(Effect.scoped(Effect.gen(function*() {
      if (http === stdio) {
        return yield* new Output.UsageError({
          message: "give --http (serve a stdio server over HTTP) or --stdio (serve a URL over stdio)"
        })
      }
      if (stdio && (Option.isSome(port) || Option.isSome(host))) {
        return yield* new Output.UsageError({ message: "--port and --host need --http" })
      }
      const protectedResource = yield* ProtectedResourceFlags.resolve(authorization)
      if (stdio && (Option.isSome(maxUpstreams) || protectedResource !== undefined)) {
        return yield* new Output.UsageError({ message: "--max-upstreams and --auth-issuer need --http" })
      }
      if (Option.isSome(upstreamPool) && frontEra !== "stateless") {
        return yield* new Output.UsageError({ message: "--upstream-pool needs --front-era stateless" })
      }
      const eras: EraFlags = { front: frontEra, upstreamPool: Option.getOrUndefined(upstreamPool) }
      const { connection: to, target } = yield* ServerFlags.resolve(connection, Option.toArray(url))
      return yield* http
        ? serveHttp(target, to, Option.getOrElse(host, () => DEFAULT_HOST), Option.getOrElse(port, () => DEFAULT_PORT), eras, {
          maxUpstreams: Option.getOrUndefined(maxUpstreams),
          authorization: protectedResource
        })
        : serveStdio(target, to, eras)
    })))
).pipe(
  Command.withDescription("Expose an MCP server over the other transport: a stdio server over HTTP, or a URL over stdio"),
  Command.withExamples([
    { command: "effect-mcp-transport bridge --http --port 8421 -- node server.js", description: "a stdio server at http://127.0.0.1:8421/mcp" },
    { command: "effect-mcp-transport bridge https://example.com/mcp --stdio", description: "a remote server for a stdio-only client" },
    {
      command: "effect-mcp-transport bridge --http --front-era stateless --upstream-pool 4 -- node server.js",
      description: "a handshake-era stdio server for 2026-07-28 clients, four processes behind one endpoint"
    }
  ])
)
