/**
 * The connect phase every client command shares: the target from the
 * positionals and the words after `--`, the transport (Target.connect), the
 * handshake (McpClient.fromTransport) and which transport was selected. All
 * of it belongs to the caller's scope: closing it kills the child or deletes
 * the HTTP session.
 */
import * as fs from "node:fs"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { Flag } from "effect/cli"
import type { HttpClient } from "effect/http"
import type { ChildProcessSpawner } from "effect/process"
import * as McpClient from "../client/McpClient.ts"
import * as Negotiation from "../client/Negotiation.ts"
import type { Selected } from "../client/fromConfig.ts"
import { reasonOf } from "../McpErrorGroup.ts"
import * as ProtocolVersion from "../ProtocolVersion.ts"
import * as LoopbackRedirect from "./LoopbackRedirect.ts"
import * as Output from "./Output.ts"
import * as Target from "./Target.ts"

/** This package's version (package.json sits two levels up from both src/cli and dist/cli). */
export const VERSION: string = (() => {
  try {
    const text = fs.readFileSync(new URL("../../package.json", import.meta.url), "utf8")
    return String((JSON.parse(text) as { version?: unknown }).version ?? "0.0.0")
  } catch {
    return "0.0.0"
  }
})()

const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m)?$/

/** `500`, `500ms`, `2s`, `1m` → a duration (a bare number is milliseconds). */
export const parseDuration = (text: string): Option.Option<Duration.Duration> => {
  const m = DURATION.exec(text.trim())
  if (m === null) return Option.none()
  const n = Number(m[1])
  switch (m[2]) {
    case "s":
      return Option.some(Duration.seconds(n))
    case "m":
      return Option.some(Duration.minutes(n))
    default:
      return Option.some(Duration.millis(n))
  }
}

/** `--timeout`: per request after the handshake; for `call`, an idle timeout that progress restarts. */
export const timeoutFlag = (defaultValue: string, description: string) =>
  Flag.String("timeout").pipe(
    Flag.withDescription(`${description} (e.g. 500ms, 10s, 2m; a bare number is ms). Default ${defaultValue}`),
    Flag.withDefault(defaultValue),
    Flag.filterMap(parseDuration, (text) => `expected a duration such as 500ms, 10s or 2m, got "${text}"`)
  )

/** `--connect-timeout`: how long spawning/connecting and the handshake may take. */
export const connectTimeoutFlag = Flag.String("connect-timeout").pipe(
  Flag.withDescription("How long connecting and the initialize handshake may take. Default 30s"),
  Flag.withDefault("30s"),
  Flag.filterMap(parseDuration, (text) => `expected a duration such as 500ms, 10s or 2m, got "${text}"`)
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

/** Connects and runs the handshake; failures are `ConnectError` (exit 3, or 5 when it timed out). */
export const open = (
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
    Effect.mapError((error) =>
      options.loginTimeout !== undefined && LoopbackRedirect.isTimeout(error)
        ? new LoopbackRedirect.LoginTimeout({ after: options.loginTimeout })
        : error
    ),
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
