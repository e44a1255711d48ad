/**
 * Requests to an authorization server's token and registration endpoints:
 * form-encoded grants with the client's authentication (RFC 6749 §2.3,
 * OAuth 2.1), and dynamic client registration (RFC 7591). Answers are read
 * with a size limit and every request with a timeout; no token or secret is
 * ever put in a URL, a log or an error. An endpoint named by an
 * authorization server's metadata is checked against the address policy
 * before it is requested.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as HttpBody from "effect/http/HttpBody"
import type * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import {
  type AssertionUnavailable,
  DpopNonceRejected,
  type ForbiddenAddress,
  InvalidGrant,
  RegistrationRefused,
  TokenEndpointFailed
} from "../../AuthError.ts"
import { truncate } from "../../McpError.ts"
import * as Http from "../internal/HttpExchange.ts"
import * as AddressPolicy from "./AddressPolicy.ts"
import * as ClientAssertion from "./ClientAssertion.ts"
import type * as Dpop from "./Dpop.ts"
import type { RegisteredClient } from "./TokenStore.ts"

/**
 * A token endpoint's successful answer (RFC 6749 §5.1).
 *
 * @since 0.1.0
 * @category models
 */
export interface TokenResponse {
  readonly accessToken: string
  /** `Bearer`, `DPoP` (bound to the proof's key), or, for a token exchange, what the server says (`N_A`). */
  readonly tokenType: string
  /** A token exchange's `issued_token_type` (RFC 8693 §2.2.1). */
  readonly issuedTokenType?: string | undefined
  readonly expiresIn?: number | undefined
  readonly refreshToken?: string | undefined
  readonly scope?: string | undefined
}

/**
 * The grants this client sends.
 *
 * @since 0.1.0
 * @category models
 */
export type Grant = "authorization_code" | "refresh_token" | "client_credentials" | "jwt_bearer" | "token_exchange"

const GRANT_TYPES: Readonly<Record<Grant, string>> = {
  authorization_code: "authorization_code",
  refresh_token: "refresh_token",
  client_credentials: "client_credentials",
  jwt_bearer: "urn:ietf:params:oauth:grant-type:jwt-bearer",
  token_exchange: "urn:ietf:params:oauth:grant-type:token-exchange"
}

const MAX_ANSWER_BYTES = 64 * 1024

/**
 * The MCP server an endpoint was discovered for, and the internal addresses
 * allowed beyond those of its own kind: the endpoint is then checked with
 * `AddressPolicy.check` before each request. Without it the endpoint is not
 * checked (one the application configured itself).
 *
 * @since 0.1.0
 * @category models
 */
export interface AddressGuard {
  readonly serverUrl: string
  readonly allowPrivateNetworks?: AddressPolicy.Allowance | undefined
}

const guard = (addresses: AddressGuard | undefined, endpoint: string) =>
  addresses === undefined
    ? Effect.void
    : AddressPolicy.check(addresses.serverUrl, endpoint, addresses.allowPrivateNetworks)

/** Form encoding as `application/x-www-form-urlencoded` wants it for Basic credentials (RFC 6749 §2.3.1). */
const formEncode = (text: string): string => encodeURIComponent(text).replace(/%20/g, "+")

const withClientAuth = (
  client: RegisteredClient | undefined,
  params: Record<string, string>,
  assertion: string | undefined
): { readonly params: Record<string, string>; readonly headers: Record<string, string> } => {
  if (client === undefined) return { params, headers: {} }
  if (client.authMethod === "private_key_jwt" && assertion !== undefined) {
    return {
      params: {
        ...params,
        client_id: client.clientId,
        client_assertion_type: ClientAssertion.ASSERTION_TYPE,
        client_assertion: assertion
      },
      headers: {}
    }
  }
  const method = client.clientSecret === undefined ? "none" : client.authMethod
  switch (method) {
    case "client_secret_basic":
      return {
        params,
        headers: {
          authorization: `Basic ${btoa(`${formEncode(client.clientId)}:${formEncode(client.clientSecret!)}`)}`
        }
      }
    case "client_secret_post":
      return { params: { ...params, client_id: client.clientId, client_secret: client.clientSecret! }, headers: {} }
    default:
      return { params: { ...params, client_id: client.clientId }, headers: {} }
  }
}

const GRANT_REFUSALS = new Set(["invalid_grant", "invalid_client", "unauthorized_client", "unsupported_grant_type"])

/** The answer as a JSON object, or `undefined` when it is not one (an error page, an empty body). */
const jsonObject = (text: string): Record<string, unknown> | undefined => {
  try {
    const parsed: unknown = JSON.parse(text)
    return typeof parsed === "object" && parsed !== null ? parsed as Record<string, unknown> : undefined
  } catch {
    return undefined
  }
}

/**
 * POSTs one grant to the token endpoint. A refusal (`invalid_grant`,
 * `invalid_client`…) fails with `InvalidGrant`; any other failure,
 * including no answer within `timeout`, with `TokenEndpointFailed`.
 *
 * With `dpop`, the request carries a proof and a `DPoP` token is accepted; a
 * `use_dpop_nonce` refusal is retried once with the server's nonce, a second
 * one is `DpopNonceRejected`. A `private_key_jwt` client signs an assertion
 * for the issuer with `signingKey`. With `addresses`, an endpoint that fails
 * the address policy is `ForbiddenAddress`, and nothing is sent.
 *
 * @since 0.1.0
 * @category requests
 */
export const requestToken = (
  http: HttpClient.HttpClient,
  options: {
    readonly issuer: string
    readonly tokenEndpoint: string
    /** Who the client is; none for a grant that needs no client (a JWT bearer assertion alone). */
    readonly client: RegisteredClient | undefined
    readonly grant: Grant
    readonly params: Record<string, string>
    readonly timeout: Duration.Input
    /** Proves possession of the provider's DPoP key; the token is then bound to it. */
    readonly dpop?: Dpop.Signer | undefined
    /** The key of a `private_key_jwt` client. */
    readonly signingKey?: ClientAssertion.SigningKey | undefined
    /** Checks the endpoint's address for the MCP server it was discovered for. Default: not checked. */
    readonly addresses?: AddressGuard | undefined
  }
): Effect.Effect<
  TokenResponse,
  InvalidGrant | TokenEndpointFailed | DpopNonceRejected | AssertionUnavailable | ForbiddenAddress
> => {
  const { issuer, dpop } = options
  const failed = (reason: string, status?: number) => new TokenEndpointFailed({ issuer, reason, status })
  const attempt = (assertion: string | undefined) => {
    const auth = withClientAuth(options.client, { grant_type: GRANT_TYPES[options.grant], ...options.params }, assertion)
    const proof = dpop === undefined ? {} : { dpop: dpop.proof("POST", options.tokenEndpoint) }
    const request = HttpClientRequest.post(options.tokenEndpoint, {
      headers: { accept: "application/json", ...auth.headers, ...proof },
      body: HttpBody.text(new URLSearchParams(auth.params).toString(), "application/x-www-form-urlencoded")
    })
    return Effect.gen(function*() {
      const response = yield* Http.execute(http, request)
      const nonce = response.headers["dpop-nonce"]
      if (dpop !== undefined && nonce !== undefined) dpop.remember(options.tokenEndpoint, nonce)
      const text = yield* Http.readText(response, MAX_ANSWER_BYTES)
      return { status: response.status, json: jsonObject(text), nonce }
    })
  }
  const { client, signingKey } = options
  const clientAssertion = client?.authMethod === "private_key_jwt" && signingKey !== undefined
    ? ClientAssertion.make(signingKey, client.clientId, issuer)
    : Effect.succeed(undefined)
  return Effect.gen(function*() {
    yield* guard(options.addresses, options.tokenEndpoint)
    const assertion = yield* clientAssertion
    let answer = yield* attempt(assertion)
    if (dpop !== undefined && !Http.isSuccess(answer.status) && answer.json?.error === "use_dpop_nonce") {
      if (answer.nonce === undefined) {
        return yield* new DpopNonceRejected({ url: options.tokenEndpoint, by: "authorization-server", nonceSent: false })
      }
      // A proof and an assertion are each good for one request: both are made afresh.
      const again = yield* clientAssertion
      answer = yield* attempt(again)
      if (!Http.isSuccess(answer.status) && answer.json?.error === "use_dpop_nonce") {
        return yield* new DpopNonceRejected({ url: options.tokenEndpoint, by: "authorization-server", nonceSent: true })
      }
    }
    const { json, status } = answer
    if (!Http.isSuccess(status)) {
      const error = typeof json?.error === "string" ? json.error : undefined
      const description = typeof json?.error_description === "string" ? truncate(json.error_description) : undefined
      if (error !== undefined && GRANT_REFUSALS.has(error) && status < 500) {
        return yield* new InvalidGrant({ issuer, grant: options.grant, error, description })
      }
      return yield* failed(error === undefined ? "an error status" : `${error}${description ? ` (${description})` : ""}`, status)
    }
    if (json === undefined || typeof json.access_token !== "string" || typeof json.token_type !== "string") {
      return yield* failed("the answer is not a token response (access_token and token_type required)", status)
    }
    const type = json.token_type.toLowerCase()
    // A token exchange issues what it was asked for (an ID-JAG is `N_A`: not an access token).
    const tokenType = options.grant === "token_exchange"
      ? json.token_type
      : type === "bearer"
      ? "Bearer"
      : type === "dpop" && dpop !== undefined
      ? "DPoP"
      : undefined
    if (tokenType === undefined) {
      return yield* failed(
        `the token type is ${json.token_type}; only Bearer${dpop === undefined ? "" : " and DPoP"} are supported`,
        status
      )
    }
    const expiresIn = typeof json.expires_in === "number" && json.expires_in >= 0 ? json.expires_in : undefined
    return {
      accessToken: json.access_token,
      tokenType,
      issuedTokenType: typeof json.issued_token_type === "string" ? json.issued_token_type : undefined,
      expiresIn,
      refreshToken: typeof json.refresh_token === "string" ? json.refresh_token : undefined,
      scope: typeof json.scope === "string" ? json.scope : undefined
    }
  }).pipe(
    Effect.catchTags({
      TransportClosed: (error) => Effect.fail(failed(error.reason)),
      RedirectRefused: (error) => Effect.fail(failed(`redirected to ${error.location} (${error.reason})`)),
      MessageTooLarge: () => Effect.fail(failed(`the answer is larger than ${MAX_ANSWER_BYTES} bytes`))
    }),
    Effect.timeoutOrElse({
      duration: options.timeout,
      orElse: () => Effect.fail(failed(`no answer within ${Duration.format(Duration.fromInputUnsafe(options.timeout))}`))
    })
  )
}

/**
 * Registers a public client (no secret, `token_endpoint_auth_method: none`)
 * for the authorization code grant at `registrationEndpoint` (RFC 7591).
 * Refused with `invalid_client_metadata` while naming a `scope`, it
 * registers once more without one. With `addresses`, an endpoint that
 * fails the address policy is `ForbiddenAddress`, and nothing is sent.
 *
 * @since 0.1.0
 * @category requests
 */
export const register = (
  http: HttpClient.HttpClient,
  options: {
    readonly issuer: string
    readonly registrationEndpoint: string
    readonly clientName: string
    readonly redirectUri: string
    readonly scope?: string | undefined
    readonly timeout: Duration.Input
    /** Checks the endpoint's address for the MCP server it was discovered for. Default: not checked. */
    readonly addresses?: AddressGuard | undefined
  }
): Effect.Effect<RegisteredClient, RegistrationRefused | ForbiddenAddress> => {
  const { issuer } = options
  const refused = (reason: string, status?: number) => new RegistrationRefused({ issuer, reason, status })
  const metadata = {
    client_name: options.clientName,
    redirect_uris: [options.redirectUri],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
    application_type: "native",
    ...(options.scope === undefined ? {} : { scope: options.scope })
  }
  const request = HttpClientRequest.post(options.registrationEndpoint, {
    headers: { accept: "application/json" },
    body: HttpBody.text(JSON.stringify(metadata), "application/json")
  })
  return Effect.gen(function*() {
    yield* guard(options.addresses, options.registrationEndpoint)
    const response = yield* Http.execute(http, request)
    const text = yield* Http.readText(response, MAX_ANSWER_BYTES)
    const json = jsonObject(text)
    if (!Http.isSuccess(response.status)) {
      const error = typeof json?.error === "string" ? json.error : "refused"
      // `scope` is optional metadata (RFC 7591 §2); a server that knows a resource's scopes only with the
      // resource (RFC 8707) refuses them here, yet grants them when the authorization request names them.
      if (error === "invalid_client_metadata" && options.scope !== undefined) {
        return yield* register(http, { ...options, scope: undefined })
      }
      const description = typeof json?.error_description === "string" ? ` (${truncate(json.error_description)})` : ""
      return yield* refused(`${error}${description}`, response.status)
    }
    if (json === undefined || typeof json.client_id !== "string") {
      return yield* refused("the answer has no client_id", response.status)
    }
    const secret = typeof json.client_secret === "string" ? json.client_secret : undefined
    const method = json.token_endpoint_auth_method
    const registered: RegisteredClient = {
      issuer,
      clientId: json.client_id,
      clientSecret: secret,
      authMethod: secret === undefined
        ? "none"
        : method === "client_secret_post"
        ? "client_secret_post"
        : "client_secret_basic",
      redirectUri: options.redirectUri
    }
    return registered
  }).pipe(
    Effect.catchTags({
      TransportClosed: (error) => Effect.fail(refused(error.reason)),
      RedirectRefused: (error) => Effect.fail(refused(`redirected to ${error.location} (${error.reason})`)),
      MessageTooLarge: () => Effect.fail(refused(`the answer is larger than ${MAX_ANSWER_BYTES} bytes`))
    }),
    Effect.timeoutOrElse({ duration: options.timeout, orElse: () => Effect.fail(refused("no answer in time")) })
  )
}
