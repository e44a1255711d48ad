/**
 * `--auth` and its companions: OAuth for URL servers. The first run signs
 * in through the browser (the authorization URL on stderr, the redirect
 * caught by a loopback listener); tokens go to a token file, so later runs
 * reuse and refresh them without a browser.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { Flag } from "effect/cli"
import type { HttpClient } from "effect/http"
import type { TokenStoreFailed } from "../AuthError.ts"
import type * as OAuthProvider from "../client/auth/OAuthProvider.ts"
import type * as TokenStore from "../client/auth/TokenStore.ts"
import type * as LoopbackRedirect from "./LoopbackRedirect.ts"
import type * as OAuthModules from "./OAuthModules.ts"
import * as Output from "./Output.ts"
import * as Durations from "./Durations.ts"

const optionalString = (name: string, metavar: string, description: string) =>
  Flag.String(name).pipe(Flag.withDescription(description), Flag.withMetavar(metavar), Flag.optional)

/** `--token-store`, shared with `logout`. */
export const tokenStoreFlag = optionalString(
  "token-store",
  "PATH",
  "The token file (mode 0600). Default $XDG_CONFIG_HOME/effect-mcp/tokens.json (~/.config/effect-mcp/tokens.json)"
)

/** The flags, as one group of a command's configuration. */
export const flags = {
  auth: Flag.Boolean("auth").pipe(
    Flag.withDescription(
      "Sign in with OAuth: in the browser on first use, then with the stored (refreshed) tokens. URL servers only"
    ),
    Flag.withDefault(false)
  ),
  clientId: optionalString("client-id", "ID", "With --auth: a pre-registered client id. Default: dynamic registration"),
  clientSecret: optionalString("client-secret", "SECRET", "With --auth: the pre-registered client's secret"),
  issuer: optionalString(
    "issuer",
    "URL",
    "With --auth: the authorization server (issuer) --client-id and --client-secret belong to; they are sent to no other. Default: the first one they are used with, kept in the token file"
  ),
  scope: optionalString("scope", "SCOPES", "With --auth: scopes to ask for when the server names none"),
  grant: Flag.Literals("grant", ["authorization_code", "client_credentials"]).pipe(
    Flag.withDescription(
      "With --auth: authorization_code (a user signs in in the browser) or client_credentials (--client-id and --client-secret, no browser). Default authorization_code"
    ),
    Flag.optional
  ),
  tokenStore: tokenStoreFlag,
  loginTimeout: Durations.flag("login-timeout", "5m", "With --auth: how long the browser sign-in may take"),
  callbackPort: Flag.Int("callback-port").pipe(
    Flag.withDescription("With --auth: the loopback port of the redirect URI. Default: a free port"),
    Flag.filter((n) => n >= 1 && n <= 65535, (n) => `expected a port between 1 and 65535, got ${n}`),
    Flag.optional
  ),
  open: Flag.Boolean("open").pipe(
    Flag.withDescription("With --auth: also open the sign-in URL with $BROWSER (or xdg-open / open). Default: only print it"),
    Flag.withDefault(false)
  ),
  allowPrivateNetworks: Flag.Boolean("allow-private-networks").pipe(
    Flag.withDescription(
      "With --auth: let the server's OAuth metadata lead to loopback, private and link-local addresses. Default: only to addresses of the server's own kind"
    ),
    Flag.withDefault(false)
  )
}

/** What the flags parse to. */
export interface Parsed {
  readonly auth: boolean
  readonly clientId: Option.Option<string>
  readonly clientSecret: Option.Option<string>
  readonly issuer: Option.Option<string>
  readonly scope: Option.Option<string>
  readonly grant: Option.Option<"authorization_code" | "client_credentials">
  readonly tokenStore: Option.Option<string>
  readonly loginTimeout: Duration.Duration
  readonly callbackPort: Option.Option<number>
  readonly open: boolean
  readonly allowPrivateNetworks: boolean
}

/** OAuth settings from a configuration entry's `auth`, the same fields as the flags. */
export interface Settings {
  readonly clientId?: string | undefined
  readonly clientSecret?: string | undefined
  readonly issuer?: string | undefined
  readonly scope?: string | undefined
  readonly grant?: "authorization_code" | "client_credentials" | undefined
  readonly tokenStore?: string | undefined
  readonly allowPrivateNetworks?: boolean | ReadonlyArray<string> | undefined
}

/** `$XDG_CONFIG_HOME/effect-mcp/tokens.json`, else `%APPDATA%\effect-mcp\tokens.json` on Windows, else `~/.config/effect-mcp/tokens.json`. */
export const defaultTokenStore = (env: NodeJS.ProcessEnv = process.env): string => {
  const xdg = env.XDG_CONFIG_HOME?.trim()
  const base = xdg !== undefined && path.isAbsolute(xdg)
    ? xdg
    : process.platform === "win32" && env.APPDATA !== undefined
    ? env.APPDATA
    : path.join(os.homedir(), ".config")
  return path.join(base, "effect-mcp", "tokens.json")
}

/** The token file to use; its directory is created (mode 0700) when missing. */
export const tokenStorePath = (flag: Option.Option<string>, fromConfig?: string): Effect.Effect<string, Output.UsageError> =>
  Effect.try({
    try: () => {
      const file = path.resolve(Option.getOrUndefined(flag) ?? fromConfig ?? defaultTokenStore())
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
      return file
    },
    catch: (error) =>
      new Output.UsageError({
        message: `cannot create the token store's directory: ${error instanceof Error ? error.message : String(error)}`
      })
  })

/**
 * The loopback port of the redirect URI the client signing in to `url` was
 * registered with: a dynamically registered client is registered for one
 * redirect URI, and its refresh tokens are only good with that client.
 */
const registeredPort = (
  { Discovery, LoopbackRedirect }: typeof OAuthModules,
  store: TokenStore.TokenStoreShape,
  url: string
) =>
  Effect.map(store.load, (contents): number | undefined => {
    const tokens = Object.values(contents.tokens).find((t) => Discovery.resourceCovers(t.resource, url))
    const redirect = tokens === undefined ? undefined : contents.clients[tokens.issuer]?.redirectUri
    if (redirect === undefined || !URL.canParse(redirect)) return undefined
    const u = new URL(redirect)
    return u.hostname === "127.0.0.1" && u.pathname === LoopbackRedirect.CALLBACK_PATH && u.port !== ""
      ? Number(u.port)
      : undefined
  })

/** Whether the flags (or a configuration entry) ask for OAuth. */
export const requested = (parsed: Parsed, fromConfig: Settings | undefined): boolean =>
  parsed.auth || fromConfig !== undefined || Option.isSome(parsed.clientId) || Option.isSome(parsed.clientSecret) ||
  Option.isSome(parsed.issuer) || Option.isSome(parsed.grant)

/**
 * The provider for `url`: flags over the configuration entry's settings.
 * A browser sign-in binds the loopback listener now (closed with the scope),
 * on the port the stored client was registered with when there is one.
 */
export const provider = (
  url: string,
  parsed: Parsed,
  fromConfig: Settings = {}
): Effect.Effect<
  OAuthProvider.OAuthProviderShape,
  Output.UsageError | LoopbackRedirect.LoopbackUnavailable | TokenStoreFailed,
  Scope.Scope | HttpClient.HttpClient
> =>
  Effect.gen(function*() {
    const clientId = Option.getOrUndefined(parsed.clientId) ?? fromConfig.clientId
    const clientSecret = Option.getOrUndefined(parsed.clientSecret) ?? fromConfig.clientSecret
    const issuer = Option.getOrUndefined(parsed.issuer) ?? fromConfig.issuer
    const scope = Option.getOrUndefined(parsed.scope) ?? fromConfig.scope
    const grant = Option.getOrUndefined(parsed.grant) ?? fromConfig.grant ?? "authorization_code"
    const allowPrivateNetworks = parsed.allowPrivateNetworks || fromConfig.allowPrivateNetworks
    if (clientSecret !== undefined && clientId === undefined) {
      return yield* new Output.UsageError({ message: "--client-secret needs --client-id" })
    }
    if (issuer !== undefined && !URL.canParse(issuer)) {
      return yield* new Output.UsageError({ message: `--issuer needs the authorization server's URL, got "${issuer}"` })
    }
    if (grant === "client_credentials" && (clientId === undefined || clientSecret === undefined)) {
      return yield* new Output.UsageError({ message: "--grant client_credentials needs --client-id and --client-secret" })
    }
    const file = yield* tokenStorePath(parsed.tokenStore, fromConfig.tokenStore)
    const oauth = yield* Effect.promise(() => import("./OAuthModules.ts"))
    const { FileTokenStore, LoopbackRedirect, OAuthProvider, TokenStore } = oauth
    const store = yield* FileTokenStore.make(file)
    const make = (options: OAuthProvider.Options) =>
      OAuthProvider.make({ clientId, clientSecret, issuer, scope, grant, allowPrivateNetworks, clientName: Output.PROGRAM, ...options }).pipe(
        Effect.provideService(TokenStore.TokenStore, store)
      )
    if (grant === "client_credentials") return yield* make({})

    const announce = (authorizationUrl: string) =>
      Output.note(
        `To sign in to ${url}, open this URL in a browser:\n${authorizationUrl}\n` +
          `Waiting for the sign-in (up to ${formatShort(parsed.loginTimeout)}; Ctrl-C to give up)…`
      )
    const opener = parsed.open ? LoopbackRedirect.defaultOpener() : undefined
    const listen = (port: number | undefined) => LoopbackRedirect.make({ port, announce, opener })
    const loopback = yield* Option.match(parsed.callbackPort, {
      onSome: (port) => listen(port),
      onNone: () =>
        Effect.flatMap(registeredPort(oauth, store, url), (port) =>
          port === undefined
            ? listen(0)
            // Taken now: a new port means a new registration and, for the stored tokens, a new sign-in.
            : Effect.catchTag(listen(port), "LoopbackUnavailable", () => listen(0)))
    })
    return yield* make({
      redirectUrl: loopback.redirectUrl,
      interaction: loopback.interaction,
      interactionTimeout: parsed.loginTimeout
    })
  })

const formatShort = (d: Duration.Duration): string => {
  const ms = Duration.toMillis(d)
  return ms % 60_000 === 0 ? `${ms / 60_000}m` : ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`
}
