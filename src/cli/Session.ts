/**
 * The connect phase every client command shares: the target from the
 * positionals and the words after `--`, the transport (Target.connect), the
 * handshake (McpClient.fromTransport) and which transport was selected. All
 * of it belongs to the caller's scope: closing it kills the child or deletes
 * the HTTP session.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { Flag, type GlobalFlag } from "effect/cli"
import type { HttpClient } from "effect/http"
import type { ChildProcessSpawner } from "effect/process"
import * as McpClient from "../client/McpClient.ts"
import * as Negotiation from "../client/Negotiation.ts"
import type { Selected } from "../client/FromConfig.ts"
import { reasonOf } from "../McpErrorGroup.ts"
import * as ProtocolVersion from "../ProtocolVersion.ts"
import type * as LoopbackRedirect from "./LoopbackRedirect.ts"
import type * as ServerFlags from "./ServerFlags.ts"
import * as Output from "./Output.ts"
import * as Durations from "./Durations.ts"
import * as ServerLogs from "./ServerLogs.ts"
import * as Target from "./Target.ts"
import * as Version from "./Version.ts"

/** This package's version. */
export const VERSION: string = Version.VERSION

/** A request's durations, down to milliseconds. */
const REQUEST_EXAMPLES: Durations.Examples = { help: "500ms, 10s, 2m; a bare number is ms", error: "500ms, 10s or 2m" }

/** `--timeout`: per request after the handshake; for `call`, an idle timeout that progress restarts. */
export const timeoutFlag = (defaultValue: string, description: string) =>
  Durations.flag("timeout", defaultValue, description, REQUEST_EXAMPLES)

/** `--connect-timeout`: how long spawning/connecting and the handshake may take. */
export const connectTimeoutFlag = Durations.flag(
  "connect-timeout",
  "30s",
  "How long connecting and the initialize handshake may take",
  { error: REQUEST_EXAMPLES.error }
)

/** What `--protocol` accepts: `auto` or a revision we speak. */
export type Protocol = "auto" | ProtocolVersion.AnyVersion

const parseProtocol = (text: string): Option.Option<Protocol> => {
  const value = text.trim()
  return value === "auto" || ProtocolVersion.isKnown(value) ? Option.some(value) : Option.none()
}

/** `--protocol`: which era and revision to speak (`auto` negotiates). */
export const protocolFlag = Flag.String("protocol").pipe(
  Flag.withDescription(
    `auto (try the stateless revision, fall back to the initialize handshake) or a revision to pin: ${
      ProtocolVersion.ALL.join(", ")
    }. Default auto`
  ),
  Flag.withDefault("auto"),
  Flag.filterMap(
    parseProtocol,
    () => `auto or one of ${ProtocolVersion.ALL.join(", ")}`
  )
)

/** The server's identity in the process-wide era cache, as McpManager keys it. */
export const eraKeyOf = (target: Target.Target): string =>
  Target.Target.$match(target, {
    Url: ({ url }) => Negotiation.identityOfHttp(url),
    Command: ({ args, command }) => Negotiation.identityOfStdio(command, args)
  })

/** How the era and revision the session speaks read: `modern (2026-07-28, stateless)`, `legacy (2025-11-25)`. */
export const describeEra = (era: ProtocolVersion.Era, version: string): string =>
  era === "modern" ? `modern (${version}, stateless)` : `legacy (${version})`

export interface Session {
  readonly client: McpClient.McpClientShape
  readonly target: Target.Target
  /** stdio, streamable-http or sse (legacy HTTP+SSE). */
  readonly transport: Selected
}

export interface OpenOptions {
  /** Default timeout of each request after the handshake. */
  readonly timeout: Duration.Duration
  /** Timeout of the handshake. */
  readonly connectTimeout: Duration.Duration
  /** Open the standalone GET stream on Streamable HTTP. Default false: our commands need only answers. */
  readonly listen?: boolean | undefined
  /** `auto` (default) or a pinned revision. */
  readonly protocol?: Protocol | undefined
  /** Headers sent with every HTTP request (`--header`, `--bearer`); default none. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** Signs requests in with OAuth (`--auth`); default none. */
  readonly auth?: Target.ConnectOptions["auth"]
  /** Variables laid over a spawned server's environment (`-e`); default none. */
  readonly env?: Readonly<Record<string, string>> | undefined
  /** A spawned server's working directory (`--cwd`); default ours. */
  readonly cwd?: string | undefined
  /** How long a browser sign-in may take; its timeout then reads as `LoginTimeout`. Default none. */
  readonly loginTimeout?: Duration.Duration | undefined
  /** Answers for the server's requests (elicitation); default none. */
  readonly handlers?: McpClient.ServerRequestHandlers | undefined
}

export const CLIENT_INFO = { name: Output.PROGRAM, version: VERSION }

/**
 * Connects and runs the handshake; failures are `ConnectError` (exit 3, or 5
 * when it timed out). With `--log-level`, the server is then asked for its log
 * messages, which are printed on stderr while the session lasts.
 */
export const open = (
  target: Target.Target,
  options: OpenOptions
): Effect.Effect<
  Session,
  Output.ConnectError | McpClient.McpClientError,
  | Scope.Scope
  | ChildProcessSpawner.ChildProcessSpawner
  | HttpClient.HttpClient
  | GlobalFlag.Setting.Identifier<"log-level">
> =>
  Effect.gen(function*() {
    const session = yield* connect(target, options)
    const level = yield* Output.LogLevel
    if (Option.isSome(level)) yield* ServerLogs.follow(session.client, level.value)
    return session
  })

/** `open` on what the server flags resolved to: its target, reached as they say. */
export const openResolved = (
  resolved: ServerFlags.Resolved,
  options: Omit<OpenOptions, keyof ServerFlags.Connection>
): ReturnType<typeof open> => open(resolved.target, { ...options, ...resolved.connection })

const connect = (
  target: Target.Target,
  options: OpenOptions
): Effect.Effect<
  Session,
  Output.ConnectError,
  Scope.Scope | ChildProcessSpawner.ChildProcessSpawner | HttpClient.HttpClient
> =>
  Effect.gen(function*() {
    const transport = yield* Target.connect(target, {
      timeout: options.timeout,
      listen: options.listen ?? false,
      headers: options.headers,
      auth: options.auth,
      env: options.env,
      cwd: options.cwd
    })
    // A browser sign-in happens inside the first request: the handshake may take as long as both.
    const handshakeTimeout = options.loginTimeout === undefined
      ? options.connectTimeout
      : Duration.sum(options.connectTimeout, options.loginTimeout)
    const client = yield* McpClient.fromTransport(transport, {
      clientInfo: CLIENT_INFO,
      protocol: options.protocol ?? "auto",
      // `protocol` picks the era; the revision `initialize` asks for is its own option.
      ...(options.protocol !== undefined && ProtocolVersion.isSupported(options.protocol)
        ? { protocolVersion: options.protocol }
        : {}),
      eraKey: eraKeyOf(target),
      // The commands need answers only: no stateless-era listen stream for list changes.
      listen: false,
      handlers: options.handlers,
      requestTimeout: options.timeout,
      initializeTimeout: handshakeTimeout,
      // The connect timeout, not McpClient's 5 s on stdio: a spawned server's start-up counts
      // against the probe, and a slow start (npx, a cold interpreter) must not read as "no discovery".
      probeTimeout: handshakeTimeout
    })
    const selected = yield* transport.selected
    return { client, target, transport: selected }
  }).pipe(
    Effect.catch((error) => {
      const after = options.loginTimeout
      if (after === undefined) return Effect.fail(error)
      // Loaded only after a sign-in: the listener's module is not needed otherwise.
      return Effect.flatMap(
        Effect.promise(() => import("./LoopbackRedirect.ts")),
        (Loopback) =>
          Effect.fail<typeof error | LoopbackRedirect.LoginTimeout>(
            Loopback.isTimeout(error) ? new Loopback.LoginTimeout({ after }) : error
          )
      )
    }),
    Output.connecting(
      Target.describe(target),
      options.protocol === undefined || options.protocol === "auto" ? undefined : pinnedHint(options.protocol)
    )
  )

/** Said after a refusal when the revision was pinned: the server may well speak another era. */
const pinnedHint = (protocol: ProtocolVersion.AnyVersion) => (cause: unknown): string | undefined => {
  const reason = reasonOf(cause)
  const tag = typeof reason === "object" && reason !== null ? (reason as { _tag?: unknown })._tag : undefined
  if (!["RpcError", "HttpError", "InvalidPayload", "UnsupportedProtocolVersion"].includes(String(tag))) return undefined
  const era = ProtocolVersion.isStateless(protocol) ? "the stateless era" : "the initialize handshake"
  return `the server refused --protocol ${protocol} (${era}); try --protocol auto`
}
