/**
 * Who the client is at an authorization server, in order of preference: a
 * configured client id (with its secret or key), its client ID metadata
 * document where the server supports those, the registration stored from
 * an earlier run, or a dynamic registration now (kept in the token store).
 */
import * as Effect from "effect/Effect"
import { type AuthError, RegistrationRefused } from "../../../AuthError.ts"
import type * as Discovery from "../Discovery.ts"
import * as TokenEndpoint from "../TokenEndpoint.ts"
import * as TokenStore from "../TokenStore.ts"
import type { ProviderContext } from "./ProviderContext.ts"

/** The client's identity at `found`'s authorization server (`scope` goes with a dynamic registration). */
export type ClientIdentity = (found: Discovery.Discovered, scope: string | undefined) => Effect.Effect<TokenStore.RegisteredClient, AuthError>

/** Finds or registers the client's identity for each authorization server. */
export const make = ({ addresses, http, options, store, timeout }: ProviderContext): ClientIdentity =>
  (found: Discovery.Discovered, scope: string | undefined): Effect.Effect<TokenStore.RegisteredClient, AuthError> =>
    Effect.gen(function*() {
      const server = found.server
      const issuer = server.issuer
      if (options.clientId !== undefined) {
        const methods = server.token_endpoint_auth_methods_supported ?? ["client_secret_basic"]
        const client: TokenStore.RegisteredClient = {
          issuer,
          clientId: options.clientId,
          clientSecret: options.clientSecret,
          authMethod: options.clientKey !== undefined
            ? "private_key_jwt"
            : options.clientSecret === undefined
            ? "none"
            : methods.includes("client_secret_basic") || !methods.includes("client_secret_post")
            ? "client_secret_basic"
            : "client_secret_post"
        }
        return client
      }
      if (options.clientMetadataUrl !== undefined && server.client_id_metadata_document_supported === true) {
        if (!options.clientMetadataUrl.startsWith("https://")) {
          return yield* new RegistrationRefused({
            issuer,
            reason: `the client metadata URL ${options.clientMetadataUrl} is not an https URL`
          })
        }
        const client: TokenStore.RegisteredClient = { issuer, clientId: options.clientMetadataUrl, authMethod: "none" }
        return client
      }
      const stored = (yield* store.load).clients[issuer]
      if (stored !== undefined && stored.redirectUri === options.redirectUrl) return stored
      if (server.registration_endpoint === undefined) {
        return yield* new RegistrationRefused({
          issuer,
          reason: "it offers neither dynamic client registration nor client ID metadata documents"
        })
      }
      if (options.redirectUrl === undefined) {
        return yield* new RegistrationRefused({ issuer, reason: "registration needs a redirectUrl, and none is configured" })
      }
      const registered = yield* TokenEndpoint.register(http, {
        issuer,
        registrationEndpoint: server.registration_endpoint,
        clientName: options.clientName ?? "effect-mcp-transport",
        redirectUri: options.redirectUrl,
        scope,
        timeout,
        addresses: addresses(found)
      })
      yield* store.update((contents) => TokenStore.withClient(contents, registered))
      return registered
    })
