/**
 * The way out of the address policy for an authorization server that is
 * meant to be internal, from the command line (`--allow-private-networks`)
 * and from a configuration entry (`auth.allowPrivateNetworks`): each one
 * reaches the provider, which then lets discovery reach the loopback
 * service the public server's metadata names (PublicWorld).
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Option, type Scope } from "effect"
import * as HttpClient from "effect/http/HttpClient"
import * as LoginFlags from "../../../src/cli/LoginFlags.ts"
import * as AddressPolicy from "../../../src/client/auth/AddressPolicy.ts"
import type * as OAuthProvider from "../../../src/client/auth/OAuthProvider.ts"
import * as McpManager from "../../../src/client/McpManager.ts"
import * as EntryAuth from "../../../src/client/manager/EntryAuth.ts"
import { CHALLENGE_HEADER, fakeResolver, internalService, PUBLIC_MCP, stubClient } from "./PublicWorld.ts"
import { tempFiles } from "../../fixtures/temp-files.ts"

const { Config } = McpManager

const live = (name: string, body: (real: HttpClient.HttpClient) => Effect.Effect<void, unknown, Scope.Scope>) =>
  it.live(name, () =>
    Effect.gen(function*() {
      const real = yield* HttpClient.HttpClient
      yield* body(real).pipe(Effect.provideService(AddressPolicy.HostResolver, fakeResolver().resolve))
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)), 20_000)

/** What the provider's sign-in after the public server's 401 fails with. */
const signInFailure = (auth: OAuthProvider.OAuthProviderShape) =>
  Effect.map(Effect.flip(auth.unauthorized(PUBLIC_MCP, CHALLENGE_HEADER, undefined)), (error) => error._tag)

const tempFile = tempFiles("allow-private-")
const tokenFile = () => tempFile("tokens.json")

const parsed = (allowPrivateNetworks: boolean): LoginFlags.Parsed => ({
  auth: true,
  clientId: Option.some("svc"),
  clientSecret: Option.some("secret"),
  issuer: Option.none(),
  scope: Option.none(),
  grant: Option.some("client_credentials"),
  tokenStore: Option.some(tokenFile()),
  loginTimeout: Duration.minutes(1),
  callbackPort: Option.none(),
  open: false,
  allowPrivateNetworks
})

describe("allowing internal authorization servers", () => {
  live("the CLI refuses by default; --allow-private-networks lets discovery through", (real) =>
    Effect.gen(function*() {
      const internal = yield* internalService
      const { client } = stubClient(real, { authorizationServers: [`${internal.origin}/internal`] })
      const provider = (allow: boolean, fromConfig?: LoginFlags.Settings) =>
        LoginFlags.provider(PUBLIC_MCP, parsed(allow), fromConfig).pipe(Effect.provideService(HttpClient.HttpClient, client))

      expect(yield* signInFailure(yield* provider(false))).toBe("ForbiddenAddress")
      expect(internal.hits).toEqual([])
      // The loopback service answers 404 to everything: discovery reached it and found nothing.
      expect(yield* signInFailure(yield* provider(true))).toBe("DiscoveryFailed")
      expect(internal.hits).toContain("GET /.well-known/oauth-authorization-server/internal")
      const hits = internal.hits.length
      // A configuration entry's list counts too when the flag is not given.
      expect(yield* signInFailure(yield* provider(false, { allowPrivateNetworks: ["127.0.0.1"] }))).toBe("DiscoveryFailed")
      expect(internal.hits.length).toBeGreaterThan(hits)
    }))

  it.effect("a configuration entry takes true or a list of hosts and ranges, and nothing else", () =>
    Effect.gen(function*() {
      const decoded = yield* Config.decode({
        mcpServers: {
          all: { type: "http", url: PUBLIC_MCP, auth: { allowPrivateNetworks: true } },
          some: { type: "http", url: PUBLIC_MCP, auth: { allowPrivateNetworks: ["auth.corp.internal", "10.0.0.0/8"] } },
          word: { type: "http", url: PUBLIC_MCP, auth: { allowPrivateNetworks: "yes" } },
          blank: { type: "http", url: PUBLIC_MCP, auth: { allowPrivateNetworks: [""] } }
        }
      })
      expect(decoded.servers.map((s) => [s.name, Config.authOf(s.config)?.allowPrivateNetworks])).toEqual([
        ["all", true],
        ["some", ["auth.corp.internal", "10.0.0.0/8"]]
      ])
      expect(decoded.invalid.map((e) => e.server).sort()).toEqual(["blank", "word"])
    }))

  live("a configuration entry's setting reaches its provider", (real) =>
    Effect.gen(function*() {
      const internal = yield* internalService
      const { client } = stubClient(real, { authorizationServers: [`${internal.origin}/internal`] })
      const provider = (settings: McpManager.Config.AuthSettings) =>
        EntryAuth.provider({ clientId: "svc", clientSecret: "secret", grant: "client_credentials", ...settings })
          .pipe(Effect.provideService(HttpClient.HttpClient, client))
      expect(yield* signInFailure(yield* provider({}))).toBe("ForbiddenAddress")
      expect(internal.hits).toEqual([])
      expect(yield* signInFailure(yield* provider({ allowPrivateNetworks: ["127.0.0.0/8"] }))).toBe("DiscoveryFailed")
      expect(internal.hits).toContain("GET /.well-known/oauth-authorization-server/internal")
    }))
})
