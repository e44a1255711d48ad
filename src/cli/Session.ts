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
import type { Selected } from "../client/fromConfig.ts"
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
    const transport = yield* Target.connect(target, { timeout: options.timeout, listen: options.listen ?? false })
    const client = yield* McpClient.fromTransport(transport, {
      clientInfo: CLIENT_INFO,
      requestTimeout: options.timeout,
      initializeTimeout: options.connectTimeout
    })
    const selected = yield* transport.selected
    return { client, target, transport: selected }
  }).pipe(Output.connecting(Target.describe(target)))
