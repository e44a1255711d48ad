/**
 * The OAuth provider of a configuration entry with `auth`: the entry's
 * settings, the application's interactive part (the library never opens a
 * browser; without one, an entry signs in only with stored tokens or client
 * credentials and otherwise fails with `InteractionRequired`), and a token
 * store: the entry's `tokenStore` file, else the application's store, else
 * memory.
 */
import * as Effect from "effect/Effect"
import type * as HttpClient from "effect/http/HttpClient"
import * as FileTokenStore from "../auth/FileTokenStore.ts"
import * as OAuthProvider from "../auth/OAuthProvider.ts"
import * as TokenStore from "../auth/TokenStore.ts"
import type * as Config from "./Config.ts"

/** What the application adds to every entry's `auth` settings. */
export interface Options {
  /**
   * Shows the authorization URL and returns the redirect. Default none: an
   * entry then signs in only with stored tokens or client credentials, and
   * fails with `InteractionRequired` when a user would have to sign in.
   */
  readonly interaction?: OAuthProvider.Interaction | undefined
  /** The redirect URI `interaction` receives at; needed with it. Default none. */
  readonly redirectUrl?: string | undefined
  /** Where entries without their own `tokenStore` keep tokens. Default: in memory, one store per entry. */
  readonly tokenStore?: TokenStore.TokenStoreShape | undefined
  /** The `client_name` sent with dynamic registration. Default "effect-mcp-transport". */
  readonly clientName?: string | undefined
}

/** A provider for one entry. */
export const provider = (
  settings: Config.AuthSettings,
  options: Options = {}
): Effect.Effect<OAuthProvider.OAuthProviderShape, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const store = settings.tokenStore !== undefined
      ? yield* FileTokenStore.make(settings.tokenStore)
      : options.tokenStore ?? (yield* TokenStore.makeMemory)
    return yield* OAuthProvider.make({
      clientId: settings.clientId,
      clientSecret: settings.clientSecret,
      issuer: settings.issuer,
      scope: settings.scope,
      grant: settings.grant,
      allowPrivateNetworks: settings.allowPrivateNetworks,
      interaction: options.interaction,
      redirectUrl: options.redirectUrl,
      clientName: options.clientName
    }).pipe(Effect.provideService(TokenStore.TokenStore, store))
  })
