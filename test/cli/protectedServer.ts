/**
 * The example server over Streamable HTTP on 127.0.0.1, protected with the
 * `authorization` option, and the scriptable authorization server of the
 * client auth tests (AuthWorld) issuing its tokens; the verifier asks the
 * authorization server's own table, so revoking or expiring a token there
 * takes effect at once.
 */
import { Context, Effect, Exit, Layer, Option, Scope } from "effect"
import * as ExampleServer from "../../src/cli/ExampleServer.ts"
import { InvalidToken, type TokenVerifierShape } from "../../src/server/auth/TokenVerifier.ts"
import * as HttpServerTransport from "../../src/server/HttpServerTransport.ts"
import * as AuthWorld from "../client/auth/AuthWorld.ts"

export interface ProtectedServer {
  /** The protected MCP endpoint. */
  readonly url: string
  readonly world: AuthWorld.AuthWorld
  readonly close: () => Promise<void>
}

export const startProtectedServer = async (knobs: Partial<AuthWorld.Knobs> = {}): Promise<ProtectedServer> => {
  const scope = Effect.runSync(Scope.make())
  const world = await Effect.runPromise(AuthWorld.make(knobs).pipe(Scope.provide(scope)))
  const verifier: TokenVerifierShape = {
    verify: (token) =>
      Effect.suspend(() => {
        const found = world.accessTokens.get(token)
        return found === undefined || found.expired
          ? Effect.fail(new InvalidToken({ reason: "unknown or expired" }))
          : Effect.succeed({
            subject: "alice",
            scopes: found.scopes,
            clientId: undefined,
            issuer: world.issuer,
            expiresAt: undefined,
            claims: {}
          })
      })
  }
  const context = await Effect.runPromise(
    Layer.buildWithScope(
      ExampleServer.layerHttp({ port: 0, authorization: { verifier, authorizationServers: [world.issuer] } }),
      scope
    )
  )
  const url = Option.getOrThrow(Context.get(context, HttpServerTransport.HttpServerTransport).url)
  return { url, world, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

/**
 * The user's part in the browser, played by the test: waits for the
 * authorization URL on the CLI's stderr, follows it to the authorization
 * server (which approves at once) and hands the redirect to the listener.
 */
export const authorizationUrl = async (
  cli: { readonly waitFor: (text: RegExp) => Promise<void>; readonly stderr: () => string }
): Promise<URL> => {
  const pattern = /^(http:\/\/127\.0\.0\.1:\d+\/authorize\?\S+)$/m
  await cli.waitFor(pattern)
  return new URL(pattern.exec(cli.stderr())![1]!)
}

/** Asks the authorization server for the redirect (it approves at once); returns where the browser would go next. */
export const approve = async (authorization: URL): Promise<URL> => {
  const response = await fetch(authorization, { redirect: "manual" })
  return new URL(response.headers.get("location")!)
}

/** Signs in: the authorization URL, the approval, the redirect to the CLI's listener; the listener's page. */
export const signIn = async (
  cli: { readonly waitFor: (text: RegExp) => Promise<void>; readonly stderr: () => string }
): Promise<{ readonly status: number; readonly page: string }> => {
  const redirect = await approve(await authorizationUrl(cli))
  const response = await fetch(redirect)
  return { status: response.status, page: await response.text() }
}
