/**
 * What a CLI command talks to. A target is either a URL (Streamable HTTP,
 * falling back to the legacy HTTP+SSE transport when the server refuses the
 * `initialize` POST with a 4xx) or a command line given after `--` (a stdio
 * server spawned as a child).
 */
import * as Data from "effect/Data"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { HttpClient } from "effect/http"
import type { ChildProcessSpawner } from "effect/process"
import type { OAuthProviderShape } from "../client/auth/OAuthProvider.ts"
import type { SpawnError } from "../McpError.ts"
import * as FromConfig from "../client/FromConfig.ts"
import * as TrailingWords from "./Trailing.ts"

export type Target = Data.TaggedEnum<{
  /** `type`: `sse` (default) probes Streamable HTTP and falls back to legacy SSE; `http` is Streamable HTTP only. */
  Url: { readonly url: string; readonly type?: "http" | "sse" | undefined }
  Command: { readonly command: string; readonly args: ReadonlyArray<string> }
}>
export const Target = Data.taggedEnum<Target>()

/** The command line names no server, or names two. */
export class TargetError extends Data.TaggedError("TargetError")<{ readonly message: string }> {}

const isUrl = (s: string): boolean => /^https?:\/\//i.test(s)

/**
 * `positional` is what came before `--`, `trailing` what came after it.
 * A URL among the positionals is the target; otherwise the trailing words
 * are the server's command line.
 */
export const parse = (
  positional: ReadonlyArray<string>,
  trailing: ReadonlyArray<string>
): Effect.Effect<{ readonly target: Target; readonly rest: ReadonlyArray<string> }, TargetError> => {
  const urlIndex = positional.findIndex(isUrl)
  if (urlIndex >= 0 && trailing.length > 0) {
    return Effect.fail(new TargetError({ message: "give either a URL or a command after --, not both" }))
  }
  if (urlIndex >= 0) {
    const rest = positional.filter((_, i) => i !== urlIndex)
    return Effect.succeed({ target: Target.Url({ url: positional[urlIndex]! }), rest })
  }
  if (trailing.length > 0) {
    const [command, ...args] = trailing
    return Effect.succeed({ target: Target.Command({ command: command!, args }), rest: positional })
  }
  return Effect.fail(
    new TargetError({ message: "no server given: pass a URL (http://…) or a command after -- (-- node server.js)" })
  )
}

/** The words after `--` on the program's command line. */
export const Trailing = TrailingWords.Trailing

/** `parse` with the trailing words from `Trailing`. */
export const fromArgs = (
  positional: ReadonlyArray<string>
): Effect.Effect<{ readonly target: Target; readonly rest: ReadonlyArray<string> }, TargetError> =>
  Effect.flatMap(Trailing, (trailing) => parse(positional, trailing))

export const describe = (target: Target): string =>
  Target.$match(target, {
    Url: ({ url }) => url,
    Command: ({ command, args }) => [command, ...args].join(" ")
  })

export interface ConnectOptions {
  /** Default request timeout. */
  readonly timeout?: Duration.Input | undefined
  /** Open the standalone GET stream on Streamable HTTP (server-initiated messages). Default true. */
  readonly listen?: boolean | undefined
  /** Headers sent with every HTTP request (`--header`, `--bearer`); URL targets only. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** Signs requests in with OAuth (`--auth`); URL targets only. */
  readonly auth?: OAuthProviderShape | undefined
  /** Variables laid over the child's environment (`-e`); command targets only. */
  readonly env?: Readonly<Record<string, string>> | undefined
  /** The child's working directory (`--cwd`); command targets only. */
  readonly cwd?: string | undefined
}

export const toConfig = (target: Target, options: ConnectOptions = {}): FromConfig.McpServerConfig =>
  Target.$match(target, {
    Url: ({ type, url }): FromConfig.McpServerConfig => ({
      type: type ?? "sse",
      url,
      headers: options.headers,
      timeout: options.timeout,
      streamableHttp: { listen: options.listen ?? true, auth: options.auth }
    }),
    Command: ({ args, command }): FromConfig.McpServerConfig => ({
      command,
      args,
      env: options.env,
      cwd: options.cwd,
      timeout: options.timeout
    })
  })

/** The transport to the target, closed (child killed, session deleted) with the scope. */
export const connect = (
  target: Target,
  options: ConnectOptions = {}
): Effect.Effect<
  FromConfig.SelectedTransport,
  SpawnError,
  Scope.Scope | ChildProcessSpawner.ChildProcessSpawner | HttpClient.HttpClient
> => FromConfig.make(toConfig(target, options))
