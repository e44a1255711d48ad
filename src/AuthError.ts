/**
 * Typed errors of OAuth 2.1 authorization (the MCP authorization spec): one
 * tagged class per way reaching a protected server can fail. Each message
 * ends with what the user has to do next. None of them carries a token.
 */
import * as Data from "effect/Data"

/**
 * Where discovery stopped: the protected resource metadata (RFC 9728), or the
 * authorization server metadata (RFC 8414 / OpenID discovery).
 *
 * @since 0.1.0
 * @category models
 */
export type DiscoveryStep = "protected-resource" | "authorization-server"

/**
 * The server asked for authorization but its metadata could not be found, read
 * or trusted: missing at every well-known location, malformed, too large,
 * naming another resource or issuer, or an authorization server without PKCE.
 *
 * @since 0.1.0
 * @category errors
 */
export class DiscoveryFailed extends Data.TaggedError("DiscoveryFailed")<{
  readonly serverUrl: string
  readonly step: DiscoveryStep
  /** What went wrong, per URL tried when there were several. */
  readonly reason: string
}> {
  override get message(): string {
    const what = this.step === "protected-resource" ? "protected resource metadata" : "authorization server metadata"
    return `Authorization discovery failed for ${this.serverUrl} (${what}): ${this.reason}. ` +
      "Check the server URL; if it is right, the server's OAuth metadata is misconfigured: tell its operator."
  }
}

/**
 * No client identity could be had from the authorization server: it refused
 * dynamic registration, or offers neither registration nor client ID metadata
 * documents and no client id was configured.
 *
 * @since 0.1.0
 * @category errors
 */
export class RegistrationRefused extends Data.TaggedError("RegistrationRefused")<{
  readonly issuer: string
  readonly reason: string
  readonly status?: number | undefined
}> {
  override get message(): string {
    const status = this.status === undefined ? "" : ` (HTTP ${this.status})`
    return `Client registration with ${this.issuer} failed${status}: ${this.reason}. ` +
      "Register a client with this authorization server yourself and configure its client id (and secret)."
  }
}

/**
 * The user (or the authorization server on their behalf) declined the
 * authorization request: the redirect carried `error=access_denied`.
 *
 * @since 0.1.0
 * @category errors
 */
export class UserDenied extends Data.TaggedError("UserDenied")<{
  readonly issuer: string
  readonly description?: string | undefined
}> {
  override get message(): string {
    const why = this.description === undefined ? "" : `: ${this.description}`
    return `Authorization was denied at ${this.issuer}${why}. Sign in again and approve the requested access.`
  }
}

/**
 * The authorization server answered the authorization request with an error
 * other than a denial (`invalid_scope`, `server_error`…), or the redirect
 * carried neither a code nor an error.
 *
 * @since 0.1.0
 * @category errors
 */
export class AuthorizationRefused extends Data.TaggedError("AuthorizationRefused")<{
  readonly issuer: string
  readonly error: string
  readonly description?: string | undefined
}> {
  override get message(): string {
    const why = this.description === undefined ? "" : ` (${this.description})`
    return `The authorization server ${this.issuer} refused the authorization request: ${this.error}${why}. ` +
      "Try again; if it persists, the requested scopes or client registration need fixing."
  }
}

/**
 * The redirect did not answer the authorization request that was sent: its
 * `state` (or its `iss`) differs. It is dropped: it may be a forged redirect.
 *
 * @since 0.1.0
 * @category errors
 */
export class StateMismatch extends Data.TaggedError("StateMismatch")<{
  readonly issuer: string
  readonly parameter: "state" | "iss"
}> {
  override get message(): string {
    return `The authorization redirect's ${this.parameter} does not match the request sent to ${this.issuer}; ` +
      "it was ignored. Start the sign-in again, and complete it only in the browser window it opened."
  }
}

/**
 * The grants a token endpoint can refuse: `jwt_bearer` is RFC 7523's
 * assertion grant, `token_exchange` RFC 8693's.
 *
 * @since 0.1.0
 * @category models
 */
export type GrantName =
  | "authorization_code"
  | "refresh_token"
  | "client_credentials"
  | "jwt_bearer"
  | "token_exchange"

/**
 * The token endpoint refused a grant: an authorization code or a refresh
 * token that is invalid, expired or revoked, or client credentials it does
 * not accept. A refused refresh token is removed from the store.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidGrant extends Data.TaggedError("InvalidGrant")<{
  readonly issuer: string
  readonly grant: GrantName
  /** The OAuth error code (`invalid_grant`, `invalid_client`…). */
  readonly error: string
  readonly description?: string | undefined
}> {
  override get message(): string {
    const why = this.description === undefined ? "" : ` (${this.description})`
    const next = this.grant === "refresh_token"
      ? "The stored sign-in has expired or was revoked and was removed: sign in again."
      : this.grant === "client_credentials"
      ? "Check the configured client id and its secret or signing key."
      : this.grant === "jwt_bearer"
      ? "Check the assertion you supply (its issuer, audience, expiry and signing key) and the client's permission to use it."
      : this.grant === "token_exchange"
      ? "Check the identity token you supply and the identity provider client's permission to exchange it."
      : "Sign in again."
    return `${this.issuer} refused the ${this.grant} grant: ${this.error}${why}. ${next}`
  }
}

/**
 * The token endpoint failed: an error status other than a grant refusal, an
 * answer that is not a token response, no answer in time, or no connection.
 *
 * @since 0.1.0
 * @category errors
 */
export class TokenEndpointFailed extends Data.TaggedError("TokenEndpointFailed")<{
  readonly issuer: string
  readonly reason: string
  readonly status?: number | undefined
}> {
  override get message(): string {
    const status = this.status === undefined ? "" : ` (HTTP ${this.status})`
    return `The token endpoint of ${this.issuer} failed${status}: ${this.reason}. ` +
      "Try again later; if it persists, tell the authorization server's operator."
  }
}

/**
 * The MCP server still refused the request after a fresh token (401), or
 * after the step-up to the scopes it asked for (403).
 *
 * @since 0.1.0
 * @category errors
 */
export class TokenRejected extends Data.TaggedError("TokenRejected")<{
  readonly serverUrl: string
  readonly status: number
  /** The server's `WWW-Authenticate` challenge, if any. */
  readonly challenge?: string | undefined
}> {
  override get message(): string {
    const challenge = this.challenge === undefined ? "" : ` (WWW-Authenticate: ${this.challenge})`
    return `${this.serverUrl} rejected a freshly issued token with HTTP ${this.status}${challenge}. ` +
      "Your account may lack access to this server: ask its operator to grant it."
  }
}

/**
 * Authorization needs the user (the authorization code flow) but the
 * provider was given no interactive handler (`openUrl` / `receiveRedirect`).
 *
 * @since 0.1.0
 * @category errors
 */
export class InteractionRequired extends Data.TaggedError("InteractionRequired")<{
  readonly serverUrl: string
  readonly reason: string
}> {
  override get message(): string {
    return `Signing in to ${this.serverUrl} needs the user: ${this.reason}. ` +
      "Configure an interactive handler (openUrl and receiveRedirect), or client credentials, or pass a token."
  }
}

/**
 * The token store could not be used: a file readable by others, contents that
 * are not a token store, a read or write that failed, or a lock another
 * process held for longer than the store waits.
 *
 * @since 0.1.0
 * @category errors
 */
export class TokenStoreFailed extends Data.TaggedError("TokenStoreFailed")<{
  readonly path: string
  readonly reason: "permissions" | "corrupt" | "io" | "locked"
  readonly detail: string
}> {
  override get message(): string {
    const next = this.reason === "permissions"
      ? `Restrict it to its owner (chmod 600 ${this.path}).`
      : this.reason === "corrupt"
      ? `Delete ${this.path} and sign in again.`
      : this.reason === "locked"
      ? `If no other process is using it, delete ${this.path}.lock.`
      : "Check the path and its directory's permissions."
    return `Token store ${this.path}: ${this.detail}. ${next}`
  }
}

/**
 * A server demanded a DPoP nonce (`use_dpop_nonce`) and did not accept the
 * retry that carried the nonce it handed out, or handed out none.
 *
 * @since 0.1.0
 * @category errors
 */
export class DpopNonceRejected extends Data.TaggedError("DpopNonceRejected")<{
  /** The token endpoint or the MCP server URL that asked. */
  readonly url: string
  readonly by: "authorization-server" | "resource-server"
  /** Whether a proof with the server's nonce was sent and refused again (else no nonce came with the demand). */
  readonly nonceSent: boolean
}> {
  override get message(): string {
    const what = this.nonceSent
      ? "refused the DPoP proof carrying the nonce it had just handed out"
      : "demanded a DPoP nonce without sending one (no DPoP-Nonce header)"
    return `${this.url} (${this.by}) ${what}. ` +
      "The server's DPoP nonce handling is broken or its clock is off: tell its operator."
  }
}

/**
 * An assertion the client must present could not be had: the configured
 * private key cannot sign (`private_key_jwt`), or the application's
 * assertion source (JWT bearer, identity token) failed or gave no JWT.
 *
 * @since 0.1.0
 * @category errors
 */
export class AssertionUnavailable extends Data.TaggedError("AssertionUnavailable")<{
  /** `client-assertion` (private_key_jwt), `jwt-bearer` or `identity-token`. */
  readonly kind: "client-assertion" | "jwt-bearer" | "identity-token"
  readonly reason: string
}> {
  override get message(): string {
    const next = this.kind === "client-assertion"
      ? "Configure a PKCS#8 PEM private key (EC P-256 for ES256, RSA for RS256) matching the algorithm."
      : this.kind === "jwt-bearer"
      ? "Check the source of the workload's JWT (its file or provider) and that it yields a compact JWT."
      : "Check the source of the enterprise identity token and that it yields a compact JWT."
    return `No ${this.kind} could be made: ${this.reason}. ${next}`
  }
}

/**
 * A request the client was to make for authorization (metadata, registration,
 * token) targets a loopback, private, link-local or otherwise internal
 * address, named by the server's metadata or resolved from its host, while
 * the MCP server itself is not on such an address. It was not sent: a
 * server could otherwise make the client reach internal services.
 *
 * @since 0.1.0
 * @category errors
 */
export class ForbiddenAddress extends Data.TaggedError("ForbiddenAddress")<{
  /** The URL that was not requested. */
  readonly url: string
  /** The MCP server the request was for. */
  readonly serverUrl: string
  /** The address its host is or resolves to. */
  readonly address: string
  /** What kind of address it is, with its range: "a private network address (10.0.0.0/8)". */
  readonly reason: string
}> {
  override get message(): string {
    return `Refused to request ${this.url} for ${this.serverUrl}: its address ${this.address} is ${this.reason}. ` +
      "If this authorization server is meant to be on an internal network, allow it with the allowPrivateNetworks " +
      "option (a host name or CIDR range, or true; --allow-private-networks on the command line); otherwise the " +
      "server's OAuth metadata points somewhere it should not: tell its operator."
  }
}

/**
 * The server's metadata names an authorization server other than the one
 * the configured credentials (a client id with its secret or key, a JWT
 * bearer source, an enterprise identity assertion) are bound to. Nothing was
 * sent to that server: credentials issued for one authorization server could
 * be replayed by another at the first.
 *
 * @since 0.1.0
 * @category errors
 */
export class IssuerMismatch extends Data.TaggedError("IssuerMismatch")<{
  readonly serverUrl: string
  /** The authorization server the credentials are bound to. */
  readonly bound: string
  /** Where the binding comes from: the `issuer` option, or the first use (kept in the token store). */
  readonly boundBy: "option" | "first-use"
  /** The authorization server the metadata names. */
  readonly issuer: string
}> {
  override get message(): string {
    const by = this.boundBy === "option" ? "by the issuer option" : "since their first use (kept in the token store)"
    return `${this.serverUrl} names the authorization server ${this.issuer}, but the configured client credentials ` +
      `are bound to ${this.bound} ${by}; nothing was sent to ${this.issuer}. ` +
      `If ${this.issuer} is the right one, allow it with the issuer option (--issuer ${this.issuer} on the command line).`
  }
}

/**
 * What reaching a server behind OAuth can fail with.
 *
 * @since 0.1.0
 * @category models
 */
export type AuthError =
  | DiscoveryFailed
  | RegistrationRefused
  | UserDenied
  | AuthorizationRefused
  | StateMismatch
  | InvalidGrant
  | TokenEndpointFailed
  | TokenRejected
  | InteractionRequired
  | TokenStoreFailed
  | DpopNonceRejected
  | AssertionUnavailable
  | ForbiddenAddress
  | IssuerMismatch
