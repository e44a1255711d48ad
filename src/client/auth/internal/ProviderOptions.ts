/**
 * How an `OAuthProvider` gets tokens: its options, and the application's
 * part of the authorization code flow. Types only, re-exported by
 * `OAuthProvider`.
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as AddressPolicy from "../AddressPolicy.ts"
import type * as ClientAssertion from "../ClientAssertion.ts"
import type * as IdentityAssertion from "../IdentityAssertion.ts"
import type * as JwtBearer from "../JwtBearer.ts"

/**
 * The user's part of the authorization code flow, supplied by the
 * application: show the authorization URL, then hand back the URL the
 * browser was redirected to.
 *
 * @since 0.1.0
 * @category models
 */
export interface Interaction {
  /** Shows the authorization URL to the user (opens a browser, prints it…). */
  readonly openUrl: (url: string) => Effect.Effect<void>
  /** The full redirect URL (with `code` and `state`, or `error`) once the user is done. */
  readonly receiveRedirect: Effect.Effect<string>
}

/**
 * How the provider gets tokens.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** A pre-registered client id, used in preference to any other identity. Default none. */
  readonly clientId?: string | undefined
  /** The pre-registered client's secret; makes it a confidential client. Default none (a public client). */
  readonly clientSecret?: string | undefined
  /**
   * The authorization server (its issuer identifier) the configured
   * credentials belong to: `clientId` with its secret or `clientKey`,
   * `jwtBearer`, `enterprise`. They are sent to no other: a server whose
   * metadata names another fails with `IssuerMismatch`. Default: the first
   * one they are used with, kept in the token store; setting it moves that
   * binding.
   */
  readonly issuer?: string | undefined
  /**
   * An https URL of this client's metadata document, used as its `client_id`
   * where the authorization server supports client ID metadata documents.
   * Default none.
   */
  readonly clientMetadataUrl?: string | undefined
  /** The `client_name` sent with dynamic registration. Default "effect-mcp-transport". */
  readonly clientName?: string | undefined
  /** The redirect URI of the authorization code flow (where `receiveRedirect` listens). Required for that flow. */
  readonly redirectUrl?: string | undefined
  /** Shows the authorization URL and returns the redirect. Without it only client credentials can be used. */
  readonly interaction?: Interaction | undefined
  /**
   * The pre-registered client's private key: it authenticates with a signed
   * assertion (`private_key_jwt`, RFC 7523) instead of a secret. Default none.
   */
  readonly clientKey?: ClientAssertion.SigningKey | undefined
  /**
   * The JWT of the JWT bearer grant (RFC 7523, workload identity), run for
   * each token request: e.g. `JwtBearer.fromFile(path)`. Default none.
   */
  readonly jwtBearer?: JwtBearer.Source | undefined
  /**
   * Enterprise-managed authorization: the identity provider and the user's
   * identity token to exchange there for an ID-JAG. Default none.
   */
  readonly enterprise?: IdentityAssertion.Options | undefined
  /**
   * The grant: `authorization_code` (a user signs in), `client_credentials`
   * (a confidential client acts for itself), `jwt_bearer` (a workload's
   * JWT) or `identity_assertion` (enterprise-managed). Default:
   * `identity_assertion` with `enterprise`, else `jwt_bearer` with
   * `jwtBearer`, else `client_credentials` when a secret or key is given and
   * no `interaction`, else `authorization_code`.
   */
  readonly grant?: "authorization_code" | "client_credentials" | "jwt_bearer" | "identity_assertion" | undefined
  /**
   * DPoP-bound tokens (RFC 9449): `"auto"` binds them when the authorization
   * server advertises ES256 in `dpop_signing_alg_values_supported` and the
   * MCP server accepts them (its 401 offers the `DPoP` scheme, or its
   * resource metadata names DPoP algorithms); `true` always sends proofs,
   * `false` never. Default `"auto"`.
   */
  readonly dpop?: boolean | "auto" | undefined
  /** Scopes to ask for when neither the server's challenge nor its metadata name any. Default none (no `scope`). */
  readonly scope?: string | undefined
  /** Bound on each request to the authorization server (metadata, registration, token). Default 30 seconds. */
  readonly timeout?: Duration.Input | undefined
  /** Bound on the user's part of the code flow (`receiveRedirect`). Default 5 minutes. */
  readonly interactionTimeout?: Duration.Input | undefined
  /** Largest metadata document read. Default 64 KiB. */
  readonly maxMetadataBytes?: number | undefined
  /** A token this close to its expiry is refreshed before use. Default 30 seconds. */
  readonly refreshMargin?: Duration.Input | undefined
  /**
   * Internal addresses the server's metadata may send discovery,
   * registration and token requests to. By default a URL whose host is, or
   * resolves to, a loopback, private, link-local, carrier-grade NAT or
   * unspecified address is refused with `ForbiddenAddress`, unless the MCP
   * server's own host has an address of the same kind. `true` allows every
   * address; a list allows those host names and addresses or CIDR ranges
   * (`["auth.corp.internal", "10.20.0.0/16"]`). Default none.
   */
  readonly allowPrivateNetworks?: AddressPolicy.Allowance | undefined
}
