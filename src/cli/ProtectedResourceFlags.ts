/**
 * `--auth-issuer` and its companions: an HTTP endpoint the CLI serves as an
 * OAuth protected resource (the HTTP server transport's `authorization`
 * option). Tokens are checked by JWT signature against the issuer's key set
 * (`--auth-jwks`) or by asking the authorization server (`--auth-introspection`).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Flag } from "effect/cli"
import type * as ProtectedResource from "../server/auth/ProtectedResource.ts"
import * as IntrospectionVerifier from "../server/auth/IntrospectionVerifier.ts"
import * as JwtVerifier from "../server/auth/JwtVerifier.ts"
import * as Output from "./Output.ts"

const optionalString = (name: string, metavar: string, description: string) =>
  Flag.String(name).pipe(Flag.withDescription(description), Flag.withMetavar(metavar), Flag.optional)

/** The flags, as one group of a command's configuration. */
export const flags = {
  issuer: optionalString(
    "auth-issuer",
    "URL",
    "Require bearer tokens from this authorization server (its issuer identifier), checked with --auth-jwks or --auth-introspection"
  ),
  jwks: optionalString("auth-jwks", "URL", "With --auth-issuer: verify JWT access tokens against this JSON Web Key Set"),
  introspection: optionalString(
    "auth-introspection",
    "URL",
    "With --auth-issuer: verify tokens by asking this introspection endpoint (RFC 7662)"
  ),
  clientId: optionalString("auth-client-id", "ID", "With --auth-introspection: this server's client id at the endpoint"),
  clientSecret: optionalString(
    "auth-client-secret",
    "SECRET",
    "With --auth-introspection: the secret going with --auth-client-id"
  ),
  resource: optionalString(
    "auth-resource",
    "URL",
    "With --auth-issuer: the URL clients reach this endpoint at, which tokens must name as audience. Default: the listening URL"
  ),
  scope: optionalString("auth-scope", "SCOPES", "With --auth-issuer: scopes every request needs (space or comma separated)")
}

/** What the flags parse to. */
export interface Parsed {
  readonly issuer: Option.Option<string>
  readonly jwks: Option.Option<string>
  readonly introspection: Option.Option<string>
  readonly clientId: Option.Option<string>
  readonly clientSecret: Option.Option<string>
  readonly resource: Option.Option<string>
  readonly scope: Option.Option<string>
}

const isHttpUrl = (text: string): boolean => {
  try {
    const url = new URL(text)
    return url.protocol === "https:" || url.protocol === "http:"
  } catch {
    return false
  }
}

/** The `authorization` option the flags describe; `undefined` without `--auth-issuer` (and none of the others). */
export const resolve = (parsed: Parsed): Effect.Effect<ProtectedResource.Options | undefined, Output.UsageError> =>
  Effect.suspend(() => {
    const usage = (message: string) => Effect.fail(new Output.UsageError({ message }))
    const issuer = Option.getOrUndefined(parsed.issuer)
    const jwks = Option.getOrUndefined(parsed.jwks)
    const introspection = Option.getOrUndefined(parsed.introspection)
    const companions = [
      ["--auth-jwks", parsed.jwks],
      ["--auth-introspection", parsed.introspection],
      ["--auth-client-id", parsed.clientId],
      ["--auth-client-secret", parsed.clientSecret],
      ["--auth-resource", parsed.resource],
      ["--auth-scope", parsed.scope]
    ] as const
    if (issuer === undefined) {
      const given = companions.find(([, value]) => Option.isSome(value))
      return given === undefined ? Effect.succeed(undefined) : usage(`${given[0]} needs --auth-issuer`)
    }
    if ((jwks === undefined) === (introspection === undefined)) {
      return usage("--auth-issuer needs one of --auth-jwks or --auth-introspection")
    }
    if (introspection === undefined && (Option.isSome(parsed.clientId) || Option.isSome(parsed.clientSecret))) {
      return usage("--auth-client-id and --auth-client-secret need --auth-introspection")
    }
    for (const [flag, value] of [["--auth-issuer", issuer], ["--auth-jwks", jwks], ["--auth-introspection", introspection], [
      "--auth-resource",
      Option.getOrUndefined(parsed.resource)
    ]] as const) {
      if (value !== undefined && !isHttpUrl(value)) return usage(`${flag} needs an http(s) URL, got "${value}"`)
    }
    const scopes = Option.match(parsed.scope, {
      onNone: () => undefined,
      onSome: (text) => text.split(/[\s,]+/).filter((s) => s.length > 0)
    })
    return Effect.succeed({
      verifier: jwks !== undefined
        ? JwtVerifier.make({ issuer, jwksUri: jwks })
        : IntrospectionVerifier.make({
          endpoint: introspection!,
          issuer,
          clientId: Option.getOrUndefined(parsed.clientId),
          clientSecret: Option.getOrUndefined(parsed.clientSecret)
        }),
      authorizationServers: [issuer],
      resource: Option.getOrUndefined(parsed.resource),
      scopes
    } satisfies ProtectedResource.Options)
  })
