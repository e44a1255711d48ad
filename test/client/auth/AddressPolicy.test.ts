/**
 * Discovery, registration and token requests do not reach internal
 * addresses a server's metadata names: the address classification, the
 * check with an injected resolver (public names that resolve to loopback
 * or private addresses), and discovery against a server at a public name
 * whose metadata points inside (PublicWorld: nothing connects anywhere but
 * 127.0.0.1).
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Result, type Scope } from "effect"
import * as HttpClient from "effect/http/HttpClient"
import * as AddressPolicy from "../../../src/client/auth/AddressPolicy.ts"
import * as Discovery from "../../../src/client/auth/Discovery.ts"
import * as OAuthProvider from "../../../src/client/auth/OAuthProvider.ts"
import * as TokenEndpoint from "../../../src/client/auth/TokenEndpoint.ts"
import * as StreamableHttp from "../../../src/client/StreamableHttpClientTransport.ts"
import * as World from "./AuthWorld.ts"
import {
  CHALLENGE,
  CHALLENGE_HEADER,
  fakeResolver,
  internalService,
  PUBLIC_MCP,
  stubClient
} from "./PublicWorld.ts"

// ---------------------------------------------------------------------------
// Classification

const table: ReadonlyArray<readonly [string, string | undefined]> = [
  // IPv4, each range at its edges
  ["0.0.0.0", "unspecified"],
  ["0.255.255.255", "unspecified"],
  ["1.0.0.0", "public"],
  ["9.255.255.255", "public"],
  ["10.0.0.0", "private"],
  ["10.255.255.255", "private"],
  ["11.0.0.0", "public"],
  ["100.63.255.255", "public"],
  ["100.64.0.0", "shared"],
  ["100.127.255.255", "shared"],
  ["100.128.0.0", "public"],
  ["126.255.255.255", "public"],
  ["127.0.0.1", "loopback"],
  ["127.255.255.254", "loopback"],
  ["128.0.0.0", "public"],
  ["169.253.255.255", "public"],
  ["169.254.169.254", "link-local"],
  ["169.255.0.0", "public"],
  ["172.15.255.255", "public"],
  ["172.16.0.0", "private"],
  ["172.20.1.1", "private"],
  ["172.31.255.255", "private"],
  ["172.32.0.0", "public"],
  ["192.167.255.255", "public"],
  ["192.168.0.1", "private"],
  ["192.169.0.0", "public"],
  ["8.8.8.8", "public"],
  ["203.0.113.10", "public"],
  ["224.0.0.1", "reserved"],
  ["255.255.255.255", "reserved"],
  // IPv6
  ["::", "unspecified"],
  ["::1", "loopback"],
  ["[::1]", "loopback"],
  ["0:0:0:0:0:0:0:1", "loopback"],
  ["::2", "reserved"],
  ["fbff:ffff::1", "public"],
  ["fc00::1", "private"],
  ["fd12:3456:789a::1", "private"],
  ["fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "private"],
  ["fe00::1", "public"],
  ["fe80::1", "link-local"],
  ["fe80::1%eth0", "link-local"],
  ["febf::1", "link-local"],
  ["fec0::1", "private"],
  ["ff02::1", "reserved"],
  ["2001:4860:4860::8888", "public"],
  // IPv6 carrying IPv4: mapped (dotted and hex, as URL writes it), NAT64, compatible
  ["::ffff:127.0.0.1", "loopback"],
  ["::ffff:7f00:1", "loopback"],
  ["[::ffff:a00:1]", "private"],
  ["0:0:0:0:0:ffff:169.254.169.254", "link-local"],
  ["::ffff:ac10:1", "private"],
  ["::ffff:ac20:1", "public"],
  ["::ffff:8.8.8.8", "public"],
  ["64:ff9b::10.0.0.1", "private"],
  ["64:ff9b::8.8.8.8", "public"],
  ["::127.0.0.1", "reserved"],
  // Not addresses
  ["example.com", undefined],
  ["localhost", undefined],
  ["1.2.3", undefined],
  ["256.1.1.1", undefined],
  ["01.2.3.4", undefined],
  ["1:2:3:4:5:6:7:8:9", undefined],
  ["1::2::3", undefined],
  ["::ffff:300.1.1.1", undefined],
  ["", undefined]
]

describe("address classification", () => {
  it("classifies IPv4, IPv6 and IPv4-carrying IPv6 addresses by range, and nothing else", () => {
    const got = table.map(([address]) => [address, AddressPolicy.classify(address)?.kind] as const)
    expect(got).toEqual(table)
  })

  it("names the range an internal address is in", () => {
    expect(AddressPolicy.classify("172.31.0.1")).toEqual({ kind: "private", range: "172.16.0.0/12" })
    expect(AddressPolicy.classify("::ffff:a9fe:a9fe")).toEqual({ kind: "link-local", range: "169.254.0.0/16" })
    expect(AddressPolicy.classify("fd00::1")).toEqual({ kind: "private", range: "fc00::/7" })
    expect(AddressPolicy.classify("93.184.215.14")).toEqual({ kind: "public" })
  })
})

// ---------------------------------------------------------------------------
// The check, with an injected resolver

const checked = (serverUrl: string, target: string, allow?: AddressPolicy.Allowance) => {
  const resolver = fakeResolver()
  return AddressPolicy.check(serverUrl, target, allow).pipe(
    Effect.provideService(AddressPolicy.HostResolver, resolver.resolve),
    Effect.result,
    Effect.map((result) => ({ result, asked: resolver.asked }))
  )
}

/** "allowed", or the refused address and why, or the tag of another failure. */
const refusal = (result: Result.Result<void, AddressPolicy.CheckError>): string => {
  if (Result.isSuccess(result)) return "allowed"
  const error = result.failure
  return error._tag === "ForbiddenAddress" ? `${error.address}: ${error.reason}` : error._tag
}

describe("AddressPolicy.check: a public server's metadata", () => {
  it.effect("may not lead to a public name that resolves to loopback or a private address", () =>
    Effect.gen(function*() {
      expect(refusal((yield* checked(PUBLIC_MCP, "https://auth.example.test/")).result))
        .toBe("127.0.0.1: a loopback address (127.0.0.0/8)")
      expect(refusal((yield* checked(PUBLIC_MCP, "https://intranet.example.test/token")).result))
        .toBe("10.0.0.1: a private network address (10.0.0.0/8)")
      expect(refusal((yield* checked(PUBLIC_MCP, "https://mapped.example.test/")).result))
        .toBe("::ffff:169.254.169.254: a link-local address (169.254.0.0/16)")
    }))

  it.effect("every resolved address is checked: one private address among public ones refuses the name", () =>
    Effect.gen(function*() {
      expect(refusal((yield* checked(PUBLIC_MCP, "https://mixed.example.test/")).result))
        .toBe("10.0.0.7: a private network address (10.0.0.0/8)")
    }))

  it.effect("a name that resolves to public addresses only is allowed", () =>
    Effect.gen(function*() {
      const { asked, result } = yield* checked(PUBLIC_MCP, "https://as.example.test/.well-known/oauth-authorization-server")
      expect(refusal(result)).toBe("allowed")
      expect(asked).toEqual(["as.example.test"])
    }))

  it.effect("internal address literals, in every spelling URL accepts, are refused without asking the resolver", () =>
    Effect.gen(function*() {
      const targets = [
        ["https://169.254.169.254/latest/meta-data/", "169.254.169.254"],
        ["http://127.0.0.1:8080/admin", "127.0.0.1"],
        ["http://2130706433/", "127.0.0.1"],
        ["http://0x7f.1/", "127.0.0.1"],
        ["http://[::1]:9/", "::1"],
        ["http://[::ffff:127.0.0.1]/", "::ffff:7f00:1"],
        ["https://[fd00::1]/", "fd00::1"],
        ["https://[fe80::1]/", "fe80::1"],
        ["https://10.0.0.1/", "10.0.0.1"],
        ["https://172.16.5.4/", "172.16.5.4"],
        ["https://192.168.1.1/", "192.168.1.1"],
        ["https://100.64.0.1/", "100.64.0.1"],
        ["http://0.0.0.0:80/", "0.0.0.0"],
        ["http://localhost:9/", "127.0.0.1"],
        ["http://LOCALHOST./", "127.0.0.1"],
        ["http://api.localhost/", "127.0.0.1"]
      ] as const
      for (const [target, address] of targets) {
        const { asked, result } = yield* checked(PUBLIC_MCP, target)
        expect(refusal(result), target).toMatch(new RegExp(`^${address.replace(/[.[\]]/g, "\\$&")}: `))
        expect(asked, target).toEqual(["mcp.example.test"])
      }
    }))

  it.effect("what the resolver gives that is not an address is refused; a name it cannot resolve fails as no connection", () =>
    Effect.gen(function*() {
      expect(refusal((yield* checked(PUBLIC_MCP, "https://odd.example.test/")).result)).toBe("not-an-address: not an IP address")
      expect(refusal((yield* checked(PUBLIC_MCP, "https://nowhere.example.test/")).result)).toBe("TransportClosed")
    }))
})

describe("AddressPolicy.check: what is allowed", () => {
  it.effect("the MCP server's own host, without resolving it", () =>
    Effect.gen(function*() {
      const { asked, result } = yield* checked("https://auth.example.test/mcp", "https://auth.example.test/.well-known/x")
      expect(refusal(result)).toBe("allowed")
      expect(asked).toEqual([])
    }))

  it.effect("an address of the kind the MCP server is on, and no other kind", () =>
    Effect.gen(function*() {
      expect(refusal((yield* checked("http://127.0.0.1:9/mcp", "http://localhost:8/")).result)).toBe("allowed")
      expect(refusal((yield* checked("http://127.0.0.1:9/mcp", "https://auth.example.test/")).result)).toBe("allowed")
      expect(refusal((yield* checked("http://localhost:9/mcp", "http://[::1]:8/")).result)).toBe("allowed")
      expect(refusal((yield* checked("http://127.0.0.1:9/mcp", "https://10.0.0.1/")).result))
        .toBe("10.0.0.1: a private network address (10.0.0.0/8)")
      expect(refusal((yield* checked("https://corp-mcp.example.test/mcp", "https://intranet.example.test/")).result))
        .toBe("allowed")
      expect(refusal((yield* checked("https://corp-mcp.example.test/mcp", "https://192.168.0.9/")).result)).toBe("allowed")
      expect(refusal((yield* checked("https://corp-mcp.example.test/mcp", "http://169.254.169.254/")).result))
        .toBe("169.254.169.254: a link-local address (169.254.0.0/16)")
    }))

  it.effect("allowPrivateNetworks: true allows every address", () =>
    Effect.gen(function*() {
      for (const target of ["https://auth.example.test/", "https://10.0.0.1/", "http://169.254.169.254/"]) {
        expect(refusal((yield* checked(PUBLIC_MCP, target, true)).result), target).toBe("allowed")
      }
    }))

  it.effect("allowPrivateNetworks lists host names (not resolved), addresses and CIDR ranges", () =>
    Effect.gen(function*() {
      const allow = ["Auth.Example.Test", "10.0.0.0/8", "192.168.1.7", "fd00::/8"]
      const named = yield* checked(PUBLIC_MCP, "https://auth.example.test/", allow)
      expect(refusal(named.result)).toBe("allowed")
      expect(named.asked).toEqual([])
      expect(refusal((yield* checked(PUBLIC_MCP, "https://intranet.example.test/", allow)).result)).toBe("allowed")
      expect(refusal((yield* checked(PUBLIC_MCP, "https://[::ffff:10.2.3.4]/", allow)).result)).toBe("allowed")
      expect(refusal((yield* checked(PUBLIC_MCP, "https://192.168.1.7/", allow)).result)).toBe("allowed")
      expect(refusal((yield* checked(PUBLIC_MCP, "https://[fd00::5]/", allow)).result)).toBe("allowed")
      expect(refusal((yield* checked(PUBLIC_MCP, "https://192.168.1.8/", allow)).result))
        .toBe("192.168.1.8: a private network address (192.168.0.0/16)")
      expect(refusal((yield* checked(PUBLIC_MCP, "https://[fe80::1]/", allow)).result))
        .toBe("fe80::1: a link-local address (fe80::/10)")
      expect(refusal((yield* checked(PUBLIC_MCP, "http://127.0.0.1/", allow)).result))
        .toBe("127.0.0.1: a loopback address (127.0.0.0/8)")
    }))

  it.effect("an entry that is not a range matches nothing", () =>
    Effect.gen(function*() {
      for (const entry of ["10.0.0.0/33", "10.0.0.0/x", "nonsense/8"]) {
        expect(refusal((yield* checked(PUBLIC_MCP, "https://10.0.0.1/", [entry])).result), entry)
          .toBe("10.0.0.1: a private network address (10.0.0.0/8)")
      }
    }))
})

// ---------------------------------------------------------------------------
// Discovery and token requests for a server at a public name

const live = (
  name: string,
  body: (real: HttpClient.HttpClient) => Effect.Effect<void, unknown, Scope.Scope | HttpClient.HttpClient>
) =>
  it.live(name, () =>
    Effect.gen(function*() {
      const real = yield* HttpClient.HttpClient
      const resolver = fakeResolver()
      yield* body(real).pipe(Effect.provideService(AddressPolicy.HostResolver, resolver.resolve))
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)), 20_000)

const failureOf = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.map(Effect.flip(effect), (error) => error as { _tag: string; url?: string; address?: string; reason?: string })

describe("discovery for a server at a public name does not reach internal addresses", () => {
  live("an authorization server on loopback: refused, and the loopback service never hears of it", (real) =>
    Effect.gen(function*() {
      const internal = yield* internalService
      const { client, requested } = stubClient(real, { authorizationServers: [`${internal.origin}/internal`] })
      const error = yield* failureOf(Discovery.discover(client, PUBLIC_MCP, CHALLENGE))
      expect(internal.hits).toEqual([])
      expect(error).toMatchObject({
        _tag: "ForbiddenAddress",
        url: `${internal.origin}/.well-known/oauth-authorization-server/internal`,
        address: "127.0.0.1"
      })
      expect(requested).toEqual([`GET ${CHALLENGE.resourceMetadata}`])
    }))

  live("the cloud metadata address and a public name that resolves to loopback: refused before any request", (real) =>
    Effect.gen(function*() {
      for (const [issuer, address] of [
        ["https://169.254.169.254/latest/meta-data", "169.254.169.254"],
        ["https://10.0.0.1", "10.0.0.1"],
        ["https://auth.example.test", "127.0.0.1"]
      ] as const) {
        const { client, requested } = stubClient(real, { authorizationServers: [issuer] })
        const error = yield* failureOf(Discovery.discover(client, PUBLIC_MCP, CHALLENGE))
        expect(error, issuer).toMatchObject({ _tag: "ForbiddenAddress", address })
        expect(requested, issuer).toEqual([`GET ${CHALLENGE.resourceMetadata}`])
      }
    }))

  live("a public authorization server whose metadata names internal endpoints: refused at discovery", (real) =>
    Effect.gen(function*() {
      const internal = yield* internalService
      for (const endpoints of [
        { token_endpoint: `${internal.origin}/token` },
        { registration_endpoint: "https://10.0.0.1/register" },
        { authorization_endpoint: "https://intranet.example.test/authorize" }
      ]) {
        const { client, requested } = stubClient(real, { authorizationServers: ["https://as.example.test"], endpoints })
        const error = yield* failureOf(Discovery.discover(client, PUBLIC_MCP, CHALLENGE))
        expect(error._tag, JSON.stringify(endpoints)).toBe("ForbiddenAddress")
        expect(requested.every((r) => new URL(r.split(" ")[1]!).hostname.endsWith("example.test"))).toBe(true)
      }
      expect(internal.hits).toEqual([])
    }))

  live("with public endpoints everywhere, discovery completes", (real) =>
    Effect.gen(function*() {
      const { client } = stubClient(real, { authorizationServers: ["https://as.example.test"] })
      const found = yield* Discovery.discover(client, PUBLIC_MCP, CHALLENGE)
      expect(found.server.token_endpoint).toBe("https://as.example.test/token")
    }))

  live("the provider refuses by default, and allowPrivateNetworks lets the request through", (real) =>
    Effect.gen(function*() {
      const internal = yield* internalService
      const { client } = stubClient(real, { authorizationServers: [`${internal.origin}/internal`] })
      const challenge = CHALLENGE_HEADER
      const refused = yield* OAuthProvider.make({ clientId: "c", clientSecret: "s" }).pipe(
        Effect.provideService(HttpClient.HttpClient, client)
      )
      expect(yield* failureOf(refused.unauthorized(PUBLIC_MCP, challenge, undefined)))
        .toMatchObject({ _tag: "ForbiddenAddress", address: "127.0.0.1" })
      expect(internal.hits).toEqual([])

      for (const allowPrivateNetworks of [true, ["127.0.0.0/8"]]) {
        const allowed = yield* OAuthProvider.make({ clientId: "c", clientSecret: "s", allowPrivateNetworks }).pipe(
          Effect.provideService(HttpClient.HttpClient, client)
        )
        // The loopback service answers 404: discovery goes on to its other locations and finds nothing.
        expect((yield* failureOf(allowed.unauthorized(PUBLIC_MCP, challenge, undefined)))._tag).toBe("DiscoveryFailed")
      }
      expect(internal.hits.filter((h) => h === "GET /.well-known/oauth-authorization-server/internal")).toHaveLength(2)
    }))

  live("token and registration requests check their endpoint when told the MCP server", (real) =>
    Effect.gen(function*() {
      const internal = yield* internalService
      const { client } = stubClient(real, { authorizationServers: [] })
      const addresses: TokenEndpoint.AddressGuard = { serverUrl: PUBLIC_MCP }
      const token = (tokenEndpoint: string, guard?: TokenEndpoint.AddressGuard) =>
        TokenEndpoint.requestToken(client, {
          issuer: "https://as.example.test",
          tokenEndpoint,
          client: { issuer: "https://as.example.test", clientId: "c", authMethod: "none" },
          grant: "client_credentials",
          params: {},
          timeout: "5 seconds",
          addresses: guard
        })
      expect(yield* failureOf(token(`${internal.origin}/token`, addresses)))
        .toMatchObject({ _tag: "ForbiddenAddress", url: `${internal.origin}/token`, address: "127.0.0.1" })
      expect(yield* failureOf(token("https://intranet.example.test/token", addresses)))
        .toMatchObject({ _tag: "ForbiddenAddress", address: "10.0.0.1" })
      const registration = TokenEndpoint.register(client, {
        issuer: "https://as.example.test",
        registrationEndpoint: `${internal.origin}/register`,
        clientName: "test",
        redirectUri: "http://127.0.0.1:1/callback",
        timeout: "5 seconds",
        addresses
      })
      expect(yield* failureOf(registration)).toMatchObject({ _tag: "ForbiddenAddress", address: "127.0.0.1" })
      expect(internal.hits).toEqual([])
      // An endpoint the application configured itself (no server named) is not checked.
      expect((yield* failureOf(token(`${internal.origin}/token`)))._tag).toBe("TokenEndpointFailed")
      expect(internal.hits).toEqual(["POST /token"])
    }))
})

describe("a real MCP server on loopback", () => {
  live("whose metadata names an authorization server that resolves to a private address: the request fails, unsent", () =>
    Effect.gen(function*() {
      const world = yield* World.make()
      // intranet.example.test is 10.0.0.1 to the injected resolver: another kind than the server's loopback.
      world.knobs.prmBody = JSON.stringify({
        resource: world.mcpUrl,
        authorization_servers: ["https://intranet.example.test/tenant"]
      })
      const auth = yield* OAuthProvider.make({ clientId: "svc", clientSecret: "svc-secret" })
      const transport = yield* StreamableHttp.make({ url: world.mcpUrl, auth, defaultTimeout: "10 seconds" })
      const error = yield* Effect.flip(transport.request("tools/list", {}))
      expect(error).toMatchObject({
        _tag: "ForbiddenAddress",
        url: "https://intranet.example.test/.well-known/oauth-authorization-server/tenant",
        serverUrl: world.mcpUrl,
        address: "10.0.0.1"
      })
      expect(world.seen.map((r) => r.path)).toEqual(["/mcp", "/.well-known/oauth-protected-resource/mcp"])
    }))

  live("whose authorization server is on loopback too: signs in as before", () =>
    Effect.gen(function*() {
      const world = yield* World.make()
      world.knobs.prmBody = JSON.stringify({
        resource: world.mcpUrl,
        authorization_servers: [world.issuer.replace("127.0.0.1", "localhost")],
        scopes_supported: ["read", "write"]
      })
      world.knobs.asBody = JSON.stringify({
        issuer: world.issuer.replace("127.0.0.1", "localhost"),
        token_endpoint: `${world.origin}/token`,
        token_endpoint_auth_methods_supported: ["client_secret_basic"]
      })
      const auth = yield* OAuthProvider.make({ clientId: "svc", clientSecret: "svc-secret" })
      const transport = yield* StreamableHttp.make({ url: world.mcpUrl, auth, defaultTimeout: "10 seconds" })
      expect(yield* transport.request("tools/list", {})).toEqual({ scopes: ["read", "write"] })
      expect(world.count("/token", "client_credentials")).toBe(1)
    }))
})
