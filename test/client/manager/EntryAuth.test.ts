/**
 * McpManager entries with `auth`: decoded by the configuration schema and
 * signed in by the default transport factory, against the example server
 * protected by the `authorization` option and a scriptable authorization
 * server. Without an interactive handler only client credentials (and
 * stored tokens) work; a browser sign-in fails with InteractionRequired.
 */
import * as fs from "node:fs"
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, Stream } from "effect"
import * as McpManager from "../../../src/client/McpManager.ts"
import * as AuthWorld from "../auth/AuthWorld.ts"
import * as LegacyProtected from "../auth/ProtectedServer.ts"
import { type ProtectedServer, startProtectedServer } from "../../cli/protectedServer.ts"
import { tempFiles } from "../../fixtures/temp-files.ts"

const tempFile = tempFiles("mcp-manager-auth-")

const { Config } = McpManager
const services = Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici)

const protectedServer = (knobs: Partial<AuthWorld.Knobs> = {}) =>
  Effect.acquireRelease(Effect.promise(() => startProtectedServer(knobs)), (s: ProtectedServer) => Effect.promise(() => s.close()))

const statusWhere = (manager: McpManager.McpManagerShape, server: string, ok: (s: McpManager.ServerStatus) => boolean) =>
  manager.status(server).pipe(Stream.filter(ok), Stream.runHead, Effect.map(Option.getOrThrow))

describe("McpManager entries with auth", () => {
  it.effect("decodes \"oauth\" and settings; refuses a secret without a client id, and auth on a stdio entry", () =>
    Effect.gen(function*() {
      const decoded = yield* Config.decode({
        mcpServers: {
          plain: { type: "http", url: "http://127.0.0.1:1/mcp", auth: "oauth" },
          service: {
            type: "http",
            url: "http://127.0.0.1:1/mcp",
            headers: { "X-Tenant": "blue" },
            auth: { clientId: "svc", clientSecret: "s", grant: "client_credentials", scope: "read", tokenStore: "/tmp/t.json" }
          },
          secretOnly: { type: "http", url: "http://127.0.0.1:1/mcp", auth: { clientSecret: "s" } },
          credentialsWithoutSecret: { type: "http", url: "http://127.0.0.1:1/mcp", auth: { grant: "client_credentials", clientId: "svc" } },
          badGrant: { type: "http", url: "http://127.0.0.1:1/mcp", auth: { grant: "password" } },
          spawned: { command: "node", auth: "oauth" }
        }
      })
      expect(decoded.servers.map((s) => s.name)).toEqual(["plain", "service"])
      expect(Config.authOf(decoded.servers[0]!.config)).toEqual({})
      expect(Config.authOf(decoded.servers[1]!.config)).toMatchObject({ clientId: "svc", grant: "client_credentials" })
      const reasons = Object.fromEntries(decoded.invalid.map((e) => [e.server, e.reason]))
      expect(reasons.secretOnly).toContain("auth.clientSecret needs auth.clientId")
      expect(reasons.credentialsWithoutSecret).toContain("needs auth.clientId and auth.clientSecret")
      expect(reasons.badGrant).toBeDefined()
      expect(reasons.spawned).toContain("auth applies to HTTP entries")
    }))

  it.live("an entry with client credentials signs in and its tools are callable; the token file is written", () =>
    Effect.gen(function*() {
      const server = yield* protectedServer()
      const tokenStore = tempFile("tokens.json")
      const manager = yield* McpManager.make({
        config: {
          mcpServers: {
            svc: {
              type: "http",
              url: server.url,
              auth: { clientId: "svc", clientSecret: "svc-secret", grant: "client_credentials", tokenStore }
            }
          }
        }
      })
      yield* statusWhere(manager, "svc", (s) => s._tag === "Ready")
      const result = yield* manager.callTool("svc__add", { a: 2, b: 3 })
      expect(JSON.stringify(result.content)).toContain("5")
      expect(server.world.count("/token", "client_credentials")).toBe(1)
      expect(fs.statSync(tokenStore).mode & 0o777).toBe(0o600)
    }).pipe(Effect.scoped, Effect.provide(services)), 60_000)

  it.live("an entry's issuer binds its client credentials: a server naming another authorization server gets none", () =>
    Effect.gen(function*() {
      const server = yield* protectedServer()
      const manager = yield* McpManager.make({
        config: {
          mcpServers: {
            svc: {
              type: "http",
              url: server.url,
              auth: { clientId: "svc", clientSecret: "svc-secret", grant: "client_credentials", issuer: "https://as.example.com" }
            }
          }
        },
        connectTimeout: "20 seconds"
      })
      const status = yield* statusWhere(manager, "svc", (s) => "lastError" in s && s.lastError !== undefined)
      expect((status as { lastError: unknown }).lastError).toMatchObject({
        _tag: "IssuerMismatch",
        bound: "https://as.example.com",
        issuer: server.world.issuer
      })
      expect(server.world.count("/token")).toBe(0)
    }).pipe(Effect.scoped, Effect.provide(services)), 60_000)

  it.live("a browser sign-in without an interactive handler fails with InteractionRequired", () =>
    Effect.gen(function*() {
      const server = yield* protectedServer()
      const manager = yield* McpManager.make({
        config: { mcpServers: { user: { type: "http", url: server.url, auth: "oauth" } } },
        connectTimeout: "20 seconds"
      })
      const status = yield* statusWhere(manager, "user", (s) => "lastError" in s && s.lastError !== undefined)
      expect((status as { lastError: { _tag: string } }).lastError._tag).toBe("InteractionRequired")
      expect(server.world.count("/authorize")).toBe(0)
    }).pipe(Effect.scoped, Effect.provide(services)), 60_000)

  it.live("with the application's interactive handler the entry signs in through it", () =>
    Effect.gen(function*() {
      const server = yield* protectedServer()
      const browser = AuthWorld.browser()
      const manager = yield* McpManager.make({
        config: { mcpServers: { user: { type: "http", url: server.url, auth: { scope: "read" } } } },
        auth: { interaction: browser.interaction, redirectUrl: "http://127.0.0.1:1/callback" }
      })
      yield* statusWhere(manager, "user", (s) => s._tag === "Ready")
      expect(browser.opened.length).toBe(1)
      expect(server.world.count("/token", "authorization_code")).toBe(1)
    }).pipe(Effect.scoped, Effect.provide(services)), 60_000)

  it.live("an \"sse\" entry with auth signs in on the legacy HTTP+SSE transport it falls back to", () =>
    Effect.gen(function*() {
      const world = yield* AuthWorld.make()
      const server = yield* LegacyProtected.serve(world)
      const browser = AuthWorld.browser()
      const manager = yield* McpManager.make({
        config: { mcpServers: { legacy: { type: "sse", url: server.sseUrl, auth: {} } } },
        auth: { interaction: browser.interaction, redirectUrl: "http://127.0.0.1:1/callback" }
      })
      yield* statusWhere(manager, "legacy", (s) => s._tag === "Ready")
      const result = yield* manager.callTool("legacy__whoami", {})
      expect(result.structuredContent).toEqual({ scopes: ["read"] })
      expect(browser.opened.length).toBe(1)
    }).pipe(Effect.scoped, Effect.provide(services)), 60_000)
})
