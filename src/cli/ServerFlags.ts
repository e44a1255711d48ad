/**
 * The flags that say which server a client command talks to and how:
 * the target (a URL, a command after `--`, or `--config FILE --server NAME`
 * read with McpManager's configuration decoder), headers (`-H`, `--bearer`),
 * OAuth (`--auth` and companions, see LoginFlags), and a spawned server's
 * environment (`-e KEY=VALUE`) and working directory (`--cwd`). Flags win
 * over the configuration entry; `-e` and `-H` add to its `env` and `headers`.
 */
import * as fs from "node:fs"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { Flag } from "effect/cli"
import type { HttpClient } from "effect/http"
import type { TokenStoreFailed } from "../AuthError.ts"
import type { OAuthProviderShape } from "../client/auth/OAuthProvider.ts"
import * as Config from "../client/manager/Config.ts"
import * as HttpHeaders from "./HttpHeaders.ts"
import * as LoginFlags from "./LoginFlags.ts"
import type * as LoopbackRedirect from "./LoopbackRedirect.ts"
import * as Output from "./Output.ts"
import * as Target from "./Target.ts"

/** The flags, as one group of a command's configuration. */
export const flags = {
  header: HttpHeaders.headerFlag,
  bearer: HttpHeaders.bearerFlag,
  env: Flag.String("env").pipe(
    Flag.withAlias("e"),
    Flag.withDescription("A variable for the spawned server's environment, as KEY=VALUE; repeatable"),
    Flag.withMetavar("KEY=VALUE"),
    Flag.atLeast(0)
  ),
  cwd: Flag.String("cwd").pipe(
    Flag.withDescription("The spawned server's working directory. Default: the current one"),
    Flag.withMetavar("DIR"),
    Flag.optional
  ),
  config: Flag.String("config").pipe(
    Flag.withDescription("An mcp.json-style file ({ \"mcpServers\": { … } }) to take the server from, with --server"),
    Flag.withMetavar("FILE"),
    Flag.optional
  ),
  server: Flag.String("server").pipe(
    Flag.withDescription("With --config: the name of the server entry to use"),
    Flag.withMetavar("NAME"),
    Flag.optional
  ),
  login: LoginFlags.flags
}

/** What the flags parse to. */
export interface Parsed {
  readonly header: ReadonlyArray<string>
  readonly bearer: Option.Option<string>
  readonly env: ReadonlyArray<string>
  readonly cwd: Option.Option<string>
  readonly config: Option.Option<string>
  readonly server: Option.Option<string>
  readonly login: LoginFlags.Parsed
}

/** How to reach the target: Session.open's and Target.connect's options. */
export interface Connection {
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly auth?: OAuthProviderShape | undefined
  readonly env?: Readonly<Record<string, string>> | undefined
  readonly cwd?: string | undefined
  readonly loginTimeout?: Duration.Duration | undefined
}

export interface Resolved {
  readonly target: Target.Target
  /** The positionals that did not name the server (call's tool name and arguments). */
  readonly rest: ReadonlyArray<string>
  readonly connection: Connection
}

const usage = (message: string) => new Output.UsageError({ message })

/** One entry of a configuration file, by name; every way that fails is a usage error naming the file. */
export const loadEntry = (file: string, name: string): Effect.Effect<Config.ServerConfig, Output.UsageError> =>
  Effect.gen(function*() {
    const text = yield* Effect.try({
      try: () => fs.readFileSync(file, "utf8"),
      catch: (error) => usage(`--config ${file}: cannot read it: ${error instanceof Error ? error.message : String(error)}`)
    })
    const decoded = yield* Effect.mapError(Config.decodeJson(text), (error) => usage(`--config ${file}: ${error.message}`))
    const found = decoded.servers.find((s) => s.name === name)
    if (found !== undefined) return found.config
    const invalid = decoded.invalid.find((e) => e.server === name)
    if (invalid !== undefined) return yield* usage(`--config ${file}: ${invalid.message}`)
    const names = decoded.servers.map((s) => s.name)
    return yield* usage(
      `--config ${file}: no enabled server named "${name}" (${names.length === 0 ? "it has none" : `it has ${names.join(", ")}`})`
    )
  })

const fromEntry = (config: Config.ServerConfig): { readonly target: Target.Target; readonly connection: Connection } =>
  Config.isStdio(config)
    ? {
      target: Target.Target.Command({ command: config.command, args: config.args ?? [] }),
      connection: { env: config.env, cwd: config.cwd }
    }
    : {
      target: Target.Target.Url({ url: config.url, type: config.type }),
      connection: {
        headers: config.headers === undefined
          ? undefined
          : Object.fromEntries(Object.entries(config.headers).map(([k, v]) => [k.toLowerCase(), v]))
      }
    }

const parseEnv = (pairs: ReadonlyArray<string>): Effect.Effect<Record<string, string> | undefined, Output.UsageError> =>
  Effect.gen(function*() {
    if (pairs.length === 0) return undefined
    const env: Record<string, string> = {}
    for (const pair of pairs) {
      const eq = pair.indexOf("=")
      const key = eq === -1 ? "" : pair.slice(0, eq)
      // The value is never echoed: it may be a credential.
      if (key === "" || /[\0]/.test(pair)) return yield* usage(`-e expects KEY=VALUE; got ${eq <= 0 ? "no key" : "a NUL byte"}`)
      env[key] = pair.slice(eq + 1)
    }
    return env
  })

/** Settles the target and how to reach it; a browser sign-in's loopback listener belongs to the scope. */
export const resolve = (
  parsed: Parsed,
  positional: ReadonlyArray<string>
): Effect.Effect<
  Resolved,
  Output.UsageError | Target.TargetError | LoopbackRedirect.LoopbackUnavailable | TokenStoreFailed,
  Scope.Scope | HttpClient.HttpClient
> =>
  Effect.gen(function*() {
    let target: Target.Target
    let rest: ReadonlyArray<string>
    let entry: Connection = {}
    let entryAuth: LoginFlags.Settings | undefined
    if (Option.isSome(parsed.config)) {
      if (Option.isNone(parsed.server)) return yield* usage("--config needs --server NAME")
      const trailing = yield* Target.Trailing
      if (trailing.length > 0 || positional.some((p) => /^https?:\/\//i.test(p))) {
        return yield* usage("give either --config with --server, or a URL, or a command after --")
      }
      const config = yield* loadEntry(parsed.config.value, parsed.server.value)
      const made = fromEntry(config)
      target = made.target
      entry = made.connection
      entryAuth = Config.authOf(config)
      rest = positional
    } else {
      if (Option.isSome(parsed.server)) return yield* usage("--server needs --config FILE")
      ;({ rest, target } = yield* Target.fromArgs(positional))
    }

    const flagHeaders = yield* HttpHeaders.resolve(target, parsed.header, parsed.bearer)
    const headers = entry.headers === undefined && flagHeaders === undefined
      ? undefined
      : { ...entry.headers, ...flagHeaders }
    const flagEnv = yield* parseEnv(parsed.env)
    if (target._tag === "Url" && (flagEnv !== undefined || Option.isSome(parsed.cwd))) {
      return yield* usage("-e and --cwd apply to command servers only")
    }
    const env = entry.env === undefined && flagEnv === undefined ? undefined : { ...entry.env, ...flagEnv }
    const cwd = Option.getOrUndefined(parsed.cwd) ?? entry.cwd

    if (!LoginFlags.requested(parsed.login, entryAuth)) return { target, rest, connection: { headers, env, cwd } }
    if (target._tag !== "Url") return yield* usage("--auth applies to URL servers only")
    if (headers?.authorization !== undefined) {
      return yield* usage("--auth signs requests itself: drop --bearer (or the Authorization header)")
    }
    const auth = yield* LoginFlags.provider(target.url, parsed.login, entryAuth)
    return { target, rest, connection: { headers, auth, loginTimeout: parsed.login.loginTimeout } }
  })

/**
 * `resolve` for a command whose operands may be URLs themselves (a resource
 * URI): with a command after `--` or `--config`, no positional names the
 * server, so all of them are operands; with a URL target, the first URL is
 * the server's.
 */
export const resolveOperands = (
  parsed: Parsed,
  positional: ReadonlyArray<string>
): ReturnType<typeof resolve> =>
  Effect.gen(function*() {
    const trailing = yield* Target.Trailing
    const elsewhere = trailing.length > 0 || Option.isSome(parsed.config)
    const resolved = yield* resolve(parsed, elsewhere ? [] : positional)
    return elsewhere ? { ...resolved, rest: positional } : resolved
  })
