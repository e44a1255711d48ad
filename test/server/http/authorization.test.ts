/**
 * The HTTP server transport's `authorization` option: the endpoint as an
 * OAuth 2.1 protected resource. Real loopback HTTP on both sides: the MCP
 * server, and a stand-in authorization server publishing keys made in the
 * test and answering introspection.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as McpClient from "../../../src/client/McpClient.ts"
import * as StreamableHttpClientTransport from "../../../src/client/StreamableHttpClientTransport.ts"
import * as JsonRpc from "../../../src/JsonRpc.ts"
import * as RequestMeta from "../../../src/RequestMeta.ts"
import * as IntrospectionVerifier from "../../../src/server/auth/IntrospectionVerifier.ts"
import * as JwtVerifier from "../../../src/server/auth/JwtVerifier.ts"
import type { Handler, HandlerContext } from "../../../src/server/Handler.ts"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../../src/server/McpServer.ts"
import {
  type AuthServer,
  hmacWithPublicKey,
  makeKey,
  parseChallenge,
  sign,
  startAuthServer,
  unsigned
} from "../../fixtures/auth-server.ts"
import { initializeBody, openSse, post, serve } from "./helpers.ts"

const MODERN = "2026-07-28"
const rsa = makeKey("RS256", "rsa-1")
const ec = makeKey("ES256", "ec-1")

/** Answers `initialize`, and any other request with what the transport told it about the caller (as a tool result). */
const whoami: Handler = Object.assign(
  (message: JsonRpc.JsonRpcRequest | JsonRpc.JsonRpcNotification, ctx: HandlerContext) =>
    Effect.succeed(
      !("id" in message) ? null : message.method === "initialize"
        ? JsonRpc.success(message.id, {
          protocolVersion: (message.params as { protocolVersion: string }).protocolVersion,
          capabilities: { tools: {} },
          serverInfo: { name: "whoami", version: "1.0.0" }
        })
        : message.method === "tools/list"
        ? JsonRpc.success(message.id, { tools: [] })
        : JsonRpc.success(message.id, {
          content: [{ type: "text", text: "whoami" }],
          structuredContent: {
            principal: ctx.principal,
            subject: ctx.auth?.subject,
            scopes: ctx.auth?.scopes,
            clientId: ctx.auth?.clientId
          }
        })
    ),
  { stateless: true }
)

const authorization = (as: AuthServer, extra: Partial<NonNullable<HttpServerTransport.Options["authorization"]>> = {}) => ({
  verifier: JwtVerifier.make({ issuer: as.issuer, jwksUri: as.jwksUri }),
  authorizationServers: [as.issuer],
  scopes: ["mcp"],
  toolScopes: { admin: ["admin"] },
  ...extra
})

/** Both the auth server and an MCP server protected by it. */
const setup = (extra?: Partial<NonNullable<HttpServerTransport.Options["authorization"]>>) =>
  Effect.gen(function*() {
    const as = yield* startAuthServer
    as.keys = [rsa.jwk, ec.jwk]
    const server = yield* serve({ authorization: authorization(as, extra) }, () => whoami)
    const now = Math.floor(Date.now() / 1000)
    const claims = (over: Record<string, unknown> = {}) => ({
      iss: as.issuer,
      aud: server.url,
      sub: "alice",
      client_id: "client-1",
      scope: "mcp",
      iat: now,
      exp: now + 300,
      ...over
    })
    return { as, server, claims }
  })

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** A 2026-07-28 request, with the headers that era requires. */
const modern = (url: string, method: string, params: Record<string, unknown>, headers: Record<string, string>) => {
  const full = { ...params, _meta: RequestMeta.requestMeta({ protocolVersion: MODERN, clientCapabilities: {} }) }
  return Effect.promise(async () => {
    const res = await post(url, { jsonrpc: "2.0", id: 1, method, params: full }, {
      ...RequestMeta.standardHeaders(MODERN, method, full),
      ...headers
    })
    const text = await res.text()
    return { status: res.status, challenge: parseChallenge(res.headers.get("www-authenticate")), body: text === "" ? undefined : JSON.parse(text) }
  })
}

const callTool = (url: string, name: string, headers: Record<string, string>) => modern(url, "tools/call", { name, arguments: {} }, headers)

const get = (url: string, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const res = await fetch(url, { headers })
    const text = await res.text()
    return { status: res.status, headers: res.headers, challenge: parseChallenge(res.headers.get("www-authenticate")), text }
  })

describe("HTTP server transport: OAuth protected resource", () => {
  it.live("serves Protected Resource Metadata at the root and the path-aware well-known URL", () =>
    Effect.gen(function*() {
      const { as, server } = yield* setup({ methodScopes: { "tools/call": ["tools"] } })
      for (const path of ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]) {
        const res = yield* get(`${server.base}${path}`)
        expect(res.status).toBe(200)
        expect(res.headers.get("access-control-allow-origin")).toBe("*")
        expect(JSON.parse(res.text)).toEqual({
          resource: server.url,
          authorization_servers: [as.issuer],
          scopes_supported: ["mcp", "tools", "admin"],
          bearer_methods_supported: ["header"]
        })
      }
      // The health probe stays open.
      expect((yield* get(`${server.base}/mcp/health`)).status).toBe(200)
    }).pipe(Effect.scoped))

  it.live("a request without a token gets 401 and a challenge pointing at the metadata", () =>
    Effect.gen(function*() {
      const { server } = yield* setup()
      const res = yield* modern(server.url, "tools/list", {}, {})
      expect(res.status).toBe(401)
      expect(res.challenge).toEqual({
        resource_metadata: `${server.base}/.well-known/oauth-protected-resource/mcp`,
        scope: "mcp"
      })
      const doc = yield* get(res.challenge!.resource_metadata!)
      expect(JSON.parse(doc.text).resource).toBe(server.url)
    }).pipe(Effect.scoped))

  it.live("every endpoint of both eras wants the token: GET/DELETE /mcp, the legacy SSE endpoints, /mcp/events", () =>
    Effect.gen(function*() {
      const { server } = yield* setup()
      const answers = yield* Effect.promise(() =>
        Promise.all([
          fetch(server.url, { headers: { accept: "text/event-stream", "mcp-session-id": "x" } }),
          fetch(server.url, { method: "DELETE", headers: { "mcp-session-id": "x" } }),
          fetch(`${server.base}/sse`, { headers: { accept: "text/event-stream" } }),
          post(`${server.base}/messages?sessionId=x`, { jsonrpc: "2.0", id: 1, method: "ping" }),
          fetch(`${server.base}/mcp/events`, { headers: { accept: "text/event-stream" } }),
          post(server.url, initializeBody())
        ])
      )
      for (const res of answers) {
        expect(res.status).toBe(401)
        expect(parseChallenge(res.headers.get("www-authenticate"))?.resource_metadata).toContain("/.well-known/oauth-protected-resource")
        yield* Effect.promise(() => res.text())
      }
    }).pipe(Effect.scoped))

  it.live("a valid RS256 token on a 2026-07-28 stateless request: the handler sees the principal", () =>
    Effect.gen(function*() {
      const { server, claims } = yield* setup()
      const res = yield* callTool(server.url, "echo", bearer(sign(rsa, claims())))
      expect(res.status).toBe(200)
      expect(res.body.result.structuredContent).toEqual({ principal: "alice", subject: "alice", scopes: ["mcp"], clientId: "client-1" })
    }).pipe(Effect.scoped))

  it.live("a valid ES256 token on a 2025 handshake: the session's handlers see the principal", () =>
    Effect.gen(function*() {
      const { server, claims } = yield* setup()
      const auth = bearer(sign(ec, claims({ scope: "mcp extra" })))
      const init = yield* Effect.promise(() => post(server.url, initializeBody(1, "2025-11-25"), auth))
      expect(init.status).toBe(200)
      yield* Effect.promise(() => init.text())
      const session = init.headers.get("mcp-session-id")!
      const headers = { ...auth, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" }
      yield* Effect.promise(() => post(server.url, { jsonrpc: "2.0", method: "notifications/initialized" }, headers).then((r) => r.text()))
      const call = yield* Effect.promise(() =>
        post(server.url, { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "echo" } }, headers, {
          headers: { ...headers, "content-type": "application/json", accept: "application/json" }
        }).then((r) => r.json())
      )
      expect(call.result.structuredContent).toEqual({ principal: "alice", subject: "alice", scopes: ["mcp", "extra"], clientId: "client-1" })
    }).pipe(Effect.scoped))

  it.live("refuses expired, wrong-audience, wrong-issuer, badly signed, alg none and HS256-confusion tokens with invalid_token", () =>
    Effect.gen(function*() {
      const { as, server, claims } = yield* setup()
      const now = Math.floor(Date.now() / 1000)
      const good = sign(rsa, claims())
      const [h, p] = good.split(".")
      const otherSignature = sign(rsa, claims({ sub: "mallory" })).split(".")[2]
      // token, and what the refusal says
      const bad: Record<string, [string, string]> = {
        expired: [sign(rsa, claims({ iat: now - 600, exp: now - 120 })), "expired"],
        "wrong audience": [sign(rsa, claims({ aud: "http://127.0.0.1:1/mcp" })), "aud"],
        "wrong issuer": [sign(rsa, claims({ iss: "http://evil.example" })), "another issuer"],
        "bad signature": [`${h}.${p}.${otherSignature}`, "bad signature"],
        "alg none": [unsigned(rsa.kid, claims()), "\"none\" not accepted"],
        "HS256 keyed with the public key": [hmacWithPublicKey(rsa, claims()), "\"HS256\" not accepted"],
        "ES256 header on the RSA key": [sign(rsa, claims(), { alg: "ES256" }), "no key"],
        "not yet valid": [sign(rsa, claims({ nbf: now + 600 })), "nbf"],
        "no expiry": [sign(rsa, claims({ exp: undefined })), "exp"]
      }
      for (const [label, [token, reason]] of Object.entries(bad)) {
        const res = yield* callTool(server.url, "echo", bearer(token))
        expect(res.status, label).toBe(401)
        expect(res.challenge?.error, label).toBe("invalid_token")
        expect(res.challenge?.error_description, label).toContain(reason)
        expect(res.challenge?.resource_metadata, label).toBe(`${server.base}/.well-known/oauth-protected-resource/mcp`)
      }
      expect(as.jwksFetches).toBe(1)
    }).pipe(Effect.scoped))

  it.live("an unknown kid makes the key set be fetched again once, then the token is refused", () =>
    Effect.gen(function*() {
      const { as, server, claims } = yield* setup()
      expect((yield* callTool(server.url, "echo", bearer(sign(rsa, claims())))).status).toBe(200)
      expect(as.jwksFetches).toBe(1)
      const stranger = makeKey("ES256", "unknown-1")
      const first = yield* callTool(server.url, "echo", bearer(sign(stranger, claims())))
      expect(first.status).toBe(401)
      expect(first.challenge?.error).toBe("invalid_token")
      expect(as.jwksFetches).toBe(2)
      // Within the cooldown another unknown kid costs the issuer nothing.
      const second = yield* callTool(server.url, "echo", bearer(sign(makeKey("ES256", "unknown-2"), claims())))
      expect(second.status).toBe(401)
      expect(as.jwksFetches).toBe(2)
    }).pipe(Effect.scoped))

  it.live("a key the issuer rotated in is picked up on its first token", () =>
    Effect.gen(function*() {
      const { as, server, claims } = yield* setup()
      expect((yield* callTool(server.url, "echo", bearer(sign(rsa, claims())))).status).toBe(200)
      const rotated = makeKey("ES256", "ec-2")
      as.keys = [...as.keys, rotated.jwk]
      const res = yield* callTool(server.url, "echo", bearer(sign(rotated, claims({ sub: "bob" }))))
      expect(res.status).toBe(200)
      expect(res.body.result.structuredContent.principal).toBe("bob")
      expect(as.jwksFetches).toBe(2)
    }).pipe(Effect.scoped))

  it.live("insufficient scope gets 403 naming the scope needed, for the whole endpoint and per tool", () =>
    Effect.gen(function*() {
      const { server, claims } = yield* setup()
      const noMcp = yield* callTool(server.url, "echo", bearer(sign(rsa, claims({ scope: "other" }))))
      expect(noMcp.status).toBe(403)
      expect(noMcp.challenge).toMatchObject({ error: "insufficient_scope", scope: "mcp" })
      expect(noMcp.challenge?.resource_metadata).toBe(`${server.base}/.well-known/oauth-protected-resource/mcp`)

      const plain = bearer(sign(rsa, claims({ scope: "mcp" })))
      const admin = yield* callTool(server.url, "admin", plain)
      expect(admin.status).toBe(403)
      expect(admin.challenge).toMatchObject({ error: "insufficient_scope", scope: "mcp admin" })
      expect((yield* callTool(server.url, "echo", plain)).status).toBe(200)
      expect((yield* callTool(server.url, "admin", bearer(sign(rsa, claims({ scope: "mcp admin" }))))).status).toBe(200)
    }).pipe(Effect.scoped))

  it.live("a scope a method needs is checked on the handshake era's POSTs too", () =>
    Effect.gen(function*() {
      const { server, claims } = yield* setup({ methodScopes: { "tools/call": ["tools"] } })
      const auth = bearer(sign(rsa, claims()))
      const init = yield* Effect.promise(() => post(server.url, initializeBody(1, "2025-11-25"), auth))
      expect(init.status).toBe(200)
      yield* Effect.promise(() => init.text())
      const headers = { ...auth, "mcp-session-id": init.headers.get("mcp-session-id")!, "mcp-protocol-version": "2025-11-25" }
      const call = yield* Effect.promise(() => post(server.url, { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "echo" } }, headers))
      expect(call.status).toBe(403)
      expect(parseChallenge(call.headers.get("www-authenticate"))).toMatchObject({ error: "insufficient_scope", scope: "mcp tools" })
      yield* Effect.promise(() => call.text())
    }).pipe(Effect.scoped))

  it.live("a token in the query string is refused", () =>
    Effect.gen(function*() {
      const { server, claims } = yield* setup()
      const token = sign(rsa, claims())
      const res = yield* modern(`${server.url}?access_token=${token}`, "tools/list", {}, {})
      expect(res.status).toBe(400)
      expect(res.challenge?.error).toBe("invalid_request")
    }).pipe(Effect.scoped))

  it.live("a session bound to one principal is refused to another's valid token", () =>
    Effect.gen(function*() {
      const { server, claims } = yield* setup()
      const alice = bearer(sign(rsa, claims()))
      const init = yield* Effect.promise(() => post(server.url, initializeBody(1, "2025-11-25"), alice))
      yield* Effect.promise(() => init.text())
      const session = init.headers.get("mcp-session-id")!
      const asBob = yield* Effect.promise(() =>
        post(server.url, { jsonrpc: "2.0", id: 2, method: "ping" }, {
          ...bearer(sign(rsa, claims({ sub: "bob" }))),
          "mcp-session-id": session,
          "mcp-protocol-version": "2025-11-25"
        })
      )
      expect(asBob.status).toBe(404)
      yield* Effect.promise(() => asBob.text())
      const asAlice = yield* Effect.promise(() =>
        post(server.url, { jsonrpc: "2.0", id: 3, method: "ping" }, { ...alice, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" })
      )
      expect(asAlice.status).toBe(200)
      yield* Effect.promise(() => asAlice.text())
    }).pipe(Effect.scoped))

  it.live("McpClient with a static Authorization header, handshake era", () =>
    Effect.gen(function*() {
      const { server, claims } = yield* setup()
      const client = yield* McpClient.connect(
        StreamableHttpClientTransport.make({ url: server.url, headers: bearer(sign(ec, claims({ sub: "frank" }))) }),
        { clientInfo: { name: "auth-test", version: "1.0.0" }, protocol: "2025-11-25" }
      )
      const result = yield* client.callTool({ name: "echo", arguments: {} })
      expect(result.structuredContent).toEqual({ principal: "frank", subject: "frank", scopes: ["mcp"], clientId: "client-1" })
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))

  it.live("the legacy HTTP+SSE endpoints: the token opens the stream, each POST is checked, replies see the principal", () =>
    Effect.gen(function*() {
      const { server, claims } = yield* setup()
      const auth = bearer(sign(rsa, claims()))
      const { reader } = yield* Effect.promise(() => openSse(`${server.base}/sse`, { headers: { ...auth, accept: "text/event-stream" } }))
      expect(reader).toBeDefined()
      yield* Effect.addFinalizer(() => Effect.sync(() => reader!.close()))
      yield* Effect.promise(() => reader!.until((r) => r.events.some((e) => e.event === "endpoint")))
      const endpoint = `${server.base}${reader!.events.find((e) => e.event === "endpoint")!.data}`
      const send = (body: unknown, headers: Record<string, string>) =>
        Effect.promise(async () => {
          const res = await post(endpoint, body, headers)
          await res.text()
          return { status: res.status, challenge: parseChallenge(res.headers.get("www-authenticate")) }
        })
      expect((yield* send(initializeBody(1, "2024-11-05"), auth)).status).toBe(202)
      expect((yield* send({ jsonrpc: "2.0", method: "notifications/initialized" }, auth)).status).toBe(202)
      expect((yield* send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "echo" } }, {})).status).toBe(401)
      const admin = yield* send({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "admin" } }, auth)
      expect(admin.status).toBe(403)
      expect(admin.challenge).toMatchObject({ error: "insufficient_scope", scope: "mcp admin" })
      expect((yield* send({ jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "echo" } }, auth)).status).toBe(202)
      yield* Effect.promise(() => reader!.until((r) => r.messages().some((m) => m.id === 4)))
      const reply = reader!.messages().find((m) => m.id === 4)
      expect(reply.result.structuredContent.principal).toBe("alice")
      expect(reader!.messages().map((m) => m.id)).toEqual([1, 4])
    }).pipe(Effect.scoped))

  it.live("McpServer's tool handlers read the token's subject and scopes from their context", () =>
    Effect.gen(function*() {
      const as = yield* startAuthServer
      as.keys = [rsa.jwk]
      const mcp = McpServer.make({ serverInfo: { name: "scoped", version: "1.0.0" }, stateless: true }).pipe(
        McpServer.method("tools/call", { params: Schema.Struct({ name: Schema.String }) }, (_, ctx) =>
          Effect.succeed({
            content: [{ type: "text" as const, text: `${ctx.principal} ${ctx.auth?.subject} ${ctx.auth?.scopes.join(",")}` }]
          }))
      )
      const handle = yield* McpServer.toHandler(mcp)
      const server = yield* serve({ authorization: authorization(as) }, () => handle.handler)
      const now = Math.floor(Date.now() / 1000)
      const token = sign(rsa, { iss: as.issuer, aud: server.url, sub: "heidi", scope: "mcp admin", exp: now + 60 })
      const res = yield* callTool(server.url, "echo", bearer(token))
      expect(res.status).toBe(200)
      expect(res.body.result.content).toEqual([{ type: "text", text: "heidi heidi mcp,admin" }])
    }).pipe(Effect.scoped))

  it.live("a verifier that cannot reach the key set answers 503, not 401", () =>
    Effect.gen(function*() {
      const as = yield* startAuthServer
      const server = yield* serve({
        authorization: {
          verifier: JwtVerifier.make({ issuer: as.issuer, jwksUri: `${as.issuer}/no-such-jwks` }),
          authorizationServers: [as.issuer]
        }
      }, () => whoami)
      const token = sign(rsa, { iss: as.issuer, aud: server.url, sub: "alice", exp: Math.floor(Date.now() / 1000) + 60 })
      const res = yield* callTool(server.url, "echo", bearer(token))
      expect(res.status).toBe(503)
      expect(res.challenge).toBeUndefined()
    }).pipe(Effect.scoped))
})

describe("HTTP server transport: the authenticate hook's principal on sessions", () => {
  const authenticate: HttpServerTransport.Authenticate = (request) => {
    const m = /^Bearer (\w+)$/.exec(request.headers.authorization ?? "")
    return m === null
      ? Effect.fail(new HttpServerTransport.Unauthorized({ wwwAuthenticate: "Bearer" }))
      : Effect.succeed({ id: m[1]! })
  }

  it.live("handlers on a Streamable HTTP session are told the principal, as on the stateless path", () =>
    Effect.gen(function*() {
      const server = yield* serve({ authenticate }, () => whoami)
      const auth = { authorization: "Bearer grace" }
      const init = yield* Effect.promise(() => post(server.url, initializeBody(1, "2025-11-25"), auth))
      yield* Effect.promise(() => init.text())
      const headers = { ...auth, "mcp-session-id": init.headers.get("mcp-session-id")!, "mcp-protocol-version": "2025-11-25" }
      const call = yield* Effect.promise(() =>
        post(server.url, { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "echo" } }, headers, {
          headers: { ...headers, "content-type": "application/json", accept: "application/json" }
        }).then((r) => r.json())
      )
      expect(call.result.structuredContent).toEqual({ principal: "grace" })
    }).pipe(Effect.scoped))
})

describe("HTTP server transport: token introspection", () => {
  const setupIntrospection = Effect.gen(function*() {
    const as = yield* startAuthServer
    const verifier = IntrospectionVerifier.make({
      endpoint: as.introspectionEndpoint,
      clientId: "mcp",
      clientSecret: "secret",
      issuer: as.issuer
    })
    const server = yield* serve({
      authorization: { verifier, authorizationServers: [as.issuer], scopes: ["mcp"] }
    }, () => whoami)
    const exp = Math.floor(Date.now() / 1000) + 300
    return { as, server, exp }
  })

  it.live("an active token's answer names the principal and is reused until it expires; an inactive one is refused", () =>
    Effect.gen(function*() {
      const { as, exp, server } = yield* setupIntrospection
      as.introspection.set("opaque-good", {
        active: true,
        sub: "carol",
        client_id: "client-9",
        scope: "mcp",
        iss: as.issuer,
        aud: server.url,
        exp
      })
      const first = yield* callTool(server.url, "echo", bearer("opaque-good"))
      expect(first.status).toBe(200)
      expect(first.body.result.structuredContent).toEqual({ principal: "carol", subject: "carol", scopes: ["mcp"], clientId: "client-9" })
      expect((yield* callTool(server.url, "echo", bearer("opaque-good"))).status).toBe(200)
      expect(as.introspectionCalls).toBe(1)

      const inactive = yield* callTool(server.url, "echo", bearer("opaque-revoked"))
      expect(inactive.status).toBe(401)
      expect(inactive.challenge?.error).toBe("invalid_token")
    }).pipe(Effect.scoped))

  it.live("an active token for another resource, or from another issuer, is refused; an expired answer is not reused", () =>
    Effect.gen(function*() {
      const { as, exp, server } = yield* setupIntrospection
      as.introspection.set("elsewhere", { active: true, sub: "dave", scope: "mcp", iss: as.issuer, aud: "https://other.example/mcp", exp })
      as.introspection.set("foreign", { active: true, sub: "dave", scope: "mcp", iss: "https://evil.example", aud: server.url, exp })
      as.introspection.set("no-aud", { active: true, sub: "dave", scope: "mcp", iss: as.issuer, exp })
      for (const token of ["elsewhere", "foreign", "no-aud"]) {
        const res = yield* callTool(server.url, "echo", bearer(token))
        expect(res.status, token).toBe(401)
        expect(res.challenge?.error, token).toBe("invalid_token")
      }
      // Expiring within the clock tolerance: accepted, but not remembered past its exp.
      const now = Math.floor(Date.now() / 1000)
      as.introspection.set("ending", { active: true, sub: "erin", scope: "mcp", iss: as.issuer, aud: server.url, exp: now - 1 })
      const calls = as.introspectionCalls
      expect((yield* callTool(server.url, "echo", bearer("ending"))).status).toBe(200)
      expect((yield* callTool(server.url, "echo", bearer("ending"))).status).toBe(200)
      expect(as.introspectionCalls).toBe(calls + 2)
    }).pipe(Effect.scoped))
})
