/**
 * The common `mcpServers` configuration shape, decoded with Schema. Each
 * entry is decoded on its own so that one bad entry is reported by name and
 * never hides the good ones:
 *
 * ```json
 * { "mcpServers": {
 *     "files": { "command": "npx", "args": ["-y", "some-server"], "env": { "K": "V" }, "cwd": "/tmp", "stderr": "inherit" },
 *     "remote": { "type": "http", "url": "https://example.com/mcp", "headers": { "Authorization": "Bearer …" } },
 *     "legacy": { "type": "sse", "url": "https://example.com/sse" },
 *     "signed": { "type": "http", "url": "https://example.com/mcp", "auth": { "scope": "tools" } } } }
 * ```
 *
 * `auth` (HTTP entries) signs the entry in with OAuth: `"oauth"`, or an
 * object with any of `clientId`, `clientSecret`, `issuer`, `scope`, `grant`
 * (`authorization_code` or `client_credentials`) and `tokenStore` (a token
 * file's path).
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as ProtocolVersion from "../../ProtocolVersion.ts"
import type { StdioStderrMode } from "../StdioClientTransport.ts"

/** Server names become tool-name prefixes, so they keep to the characters tool names allow. */
const ServerName = Schema.String.check(
  Schema.makeFilter((s: string) =>
    /^[A-Za-z0-9_.-]{1,64}$/.test(s) ? undefined : "server names use 1 to 64 of A-Z a-z 0-9 _ . -"
  )
)

const TimeoutMs = Schema.Int.check(
  Schema.makeFilter((n: number) => (n > 0 ? undefined : "must be a positive number of milliseconds"))
)

const Url = Schema.String.check(
  Schema.makeFilter((s: string) => (URL.canParse(s) ? undefined : `not an absolute URL: ${JSON.stringify(s)}`))
)

/** `auto` (default) or a revision this runtime speaks: which era to speak with the server. */
const Protocol = Schema.String.check(
  Schema.makeFilter((s: string) =>
    s === "auto" || ProtocolVersion.isKnown(s) ? undefined : `not "auto" nor a revision we speak: ${JSON.stringify(s)}`
  )
)

export const StdioServerConfig = Schema.Struct({
  type: Schema.optionalKey(Schema.Literal("stdio")),
  command: Schema.NonEmptyString,
  args: Schema.optionalKey(Schema.Array(Schema.String)),
  env: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  cwd: Schema.optionalKey(Schema.String),
  /** Default request timeout of this server's transport, in milliseconds (the entry's `timeout`). */
  timeout: Schema.optionalKey(TimeoutMs),
  /** Connect timeout for this server (spawn to ready), in milliseconds, overriding the manager's. */
  connectTimeout: Schema.optionalKey(TimeoutMs),
  protocol: Schema.optionalKey(Protocol),
  /** Where the server's stderr goes: kept here (`pipe`, the default), this process's own (`inherit`), or nowhere (`ignore`). */
  stderr: Schema.optionalKey(Schema.Literals(["pipe", "inherit", "ignore"] as const satisfies ReadonlyArray<StdioStderrMode>)),
  disabled: Schema.optionalKey(Schema.Boolean)
})
export type StdioServerConfig = typeof StdioServerConfig.Type

/** An HTTP entry's OAuth settings; each one left out takes the OAuth provider's default. */
export const AuthSettings = Schema.Struct({
  /** A pre-registered client id (else dynamic registration). */
  clientId: Schema.optionalKey(Schema.NonEmptyString),
  /** That client's secret (a confidential client). */
  clientSecret: Schema.optionalKey(Schema.NonEmptyString),
  /** The authorization server the client belongs to; its credentials are sent to no other (else: the first one used). */
  issuer: Schema.optionalKey(Url),
  /** Scopes asked for when the server names none. */
  scope: Schema.optionalKey(Schema.String),
  /** `authorization_code` (a user signs in) or `client_credentials` (the client acts for itself). */
  grant: Schema.optionalKey(Schema.Literals(["authorization_code", "client_credentials"])),
  /** A JSON file the tokens are kept in between runs (mode 0600); else they live in memory. */
  tokenStore: Schema.optionalKey(Schema.NonEmptyString),
  /**
   * Internal addresses (loopback, private, link-local…) the server's OAuth metadata may lead to:
   * `true`, or host names and CIDR ranges. Else only addresses of the server's own kind.
   */
  allowPrivateNetworks: Schema.optionalKey(Schema.Union([Schema.Boolean, Schema.Array(Schema.NonEmptyString)]))
})
export type AuthSettings = typeof AuthSettings.Type

export const HttpServerConfig = Schema.Struct({
  /** `http` is Streamable HTTP; `sse` is the legacy 2024-11-05 HTTP+SSE transport. */
  type: Schema.Literals(["http", "sse"]),
  url: Url,
  headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  /** OAuth: `"oauth"` (every setting at its default) or the settings. */
  auth: Schema.optionalKey(Schema.Union([Schema.Literal("oauth"), AuthSettings])),
  timeout: Schema.optionalKey(TimeoutMs),
  connectTimeout: Schema.optionalKey(TimeoutMs),
  protocol: Schema.optionalKey(Protocol),
  disabled: Schema.optionalKey(Schema.Boolean)
})
export type HttpServerConfig = typeof HttpServerConfig.Type

export type ServerConfig = StdioServerConfig | HttpServerConfig

export const isStdio = (config: ServerConfig): config is StdioServerConfig => "command" in config

/** An HTTP entry's OAuth settings (`"oauth"` reads as all defaults); undefined without `auth`. */
export const authOf = (config: ServerConfig): AuthSettings | undefined =>
  isStdio(config) || config.auth === undefined ? undefined : config.auth === "oauth" ? {} : config.auth

/** What the schema cannot say about `auth`: the settings that only make sense together. */
const authProblem = (auth: AuthSettings | undefined): string | undefined => {
  if (auth === undefined) return undefined
  if (auth.clientSecret !== undefined && auth.clientId === undefined) return "auth.clientSecret needs auth.clientId"
  if (auth.grant === "client_credentials" && auth.clientSecret === undefined) {
    return "auth.grant client_credentials needs auth.clientId and auth.clientSecret"
  }
  return undefined
}

/** A configuration entry that could not be used. */
export class ConfigError extends Data.TaggedError("ConfigError")<{
  /** The entry's name, or undefined when the document itself is wrong. */
  readonly server: string | undefined
  readonly reason: string
}> {
  override get message(): string {
    return this.server === undefined
      ? `Invalid MCP configuration: ${this.reason}`
      : `Invalid MCP configuration for server "${this.server}": ${this.reason}`
  }
}

export interface DecodedConfig {
  /** Usable entries, in document order (disabled ones left out). */
  readonly servers: ReadonlyArray<{ readonly name: string; readonly config: ServerConfig }>
  /** Entries that did not decode, each with why. */
  readonly invalid: ReadonlyArray<ConfigError>
}

const decodeStdio = Schema.decodeUnknownResult(StdioServerConfig, { onExcessProperty: "ignore" })
const decodeHttp = Schema.decodeUnknownResult(HttpServerConfig, { onExcessProperty: "ignore" })
const decodeName = Schema.decodeUnknownResult(ServerName)

const decodeEntry = (name: string, entry: unknown): ServerConfig | ConfigError => {
  const named = decodeName(name)
  if (Result.isFailure(named)) return new ConfigError({ server: name, reason: named.failure.message })
  if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
    return new ConfigError({ server: name, reason: "an entry must be an object" })
  }
  const e = entry as Record<string, unknown>
  const type = e.type
  const http = type === "http" || type === "sse" || type === "streamable-http" || type === "streamableHttp" ||
    (type === undefined && "url" in e && !("command" in e))
  if (http) {
    // Aliases seen in the wild for Streamable HTTP.
    const normalized = type === "streamable-http" || type === "streamableHttp" || type === undefined
      ? { ...e, type: "http" }
      : e
    const r = decodeHttp(normalized)
    if (Result.isFailure(r)) return new ConfigError({ server: name, reason: r.failure.message })
    const problem = authProblem(authOf(r.success))
    return problem === undefined ? r.success : new ConfigError({ server: name, reason: problem })
  }
  if (type !== undefined && type !== "stdio") {
    return new ConfigError({ server: name, reason: `unknown type ${JSON.stringify(type)} (expected stdio, http or sse)` })
  }
  if ("auth" in e) {
    return new ConfigError({ server: name, reason: "auth applies to HTTP entries (url) only" })
  }
  if (!("command" in e)) {
    return new ConfigError({ server: name, reason: "needs either a command (stdio) or a url (http, sse)" })
  }
  const r = decodeStdio(e)
  return Result.isSuccess(r) ? r.success : new ConfigError({ server: name, reason: r.failure.message })
}

/**
 * Decodes a document `{ mcpServers: { … } }` (or the inner map alone). Bad
 * entries are returned in `invalid`; only a document that is not an object
 * at all fails.
 */
export const decode = (document: unknown): Effect.Effect<DecodedConfig, ConfigError> =>
  Effect.suspend(() => {
    if (typeof document !== "object" || document === null || Array.isArray(document)) {
      return Effect.fail(new ConfigError({ server: undefined, reason: "expected an object with an mcpServers member" }))
    }
    const doc = document as Record<string, unknown>
    const map = "mcpServers" in doc ? doc.mcpServers : doc
    if (typeof map !== "object" || map === null || Array.isArray(map)) {
      return Effect.fail(new ConfigError({ server: undefined, reason: "mcpServers must be an object" }))
    }
    const servers: Array<{ name: string; config: ServerConfig }> = []
    const invalid: Array<ConfigError> = []
    for (const [name, entry] of Object.entries(map)) {
      const decoded = decodeEntry(name, entry)
      if (decoded instanceof ConfigError) invalid.push(decoded)
      else if (decoded.disabled !== true) servers.push({ name, config: decoded })
    }
    return Effect.succeed({ servers, invalid })
  })

/** Decodes JSON text (a config file's content). */
export const decodeJson = (text: string): Effect.Effect<DecodedConfig, ConfigError> =>
  Effect.try({
    try: () => JSON.parse(text) as unknown,
    catch: (error) => new ConfigError({ server: undefined, reason: `not JSON: ${String(error)}` })
  }).pipe(Effect.flatMap(decode))

/** Like `decode`, but any bad entry fails the whole document (for strict start-up). */
export const decodeStrict = (document: unknown): Effect.Effect<DecodedConfig, ConfigError> =>
  Effect.flatMap(decode(document), (decoded) =>
    decoded.invalid.length === 0 ? Effect.succeed(decoded) : Effect.fail(decoded.invalid[0]!))
