/**
 * `fromConfig` passes its `auth` to whichever transport it builds: an `http`
 * entry signs in on Streamable HTTP, an `sse` entry signs in on the legacy
 * HTTP+SSE transport it falls back to.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import type { HttpClient } from "effect/http"
import * as OAuthProvider from "../../../src/client/auth/OAuthProvider.ts"
import * as FromConfig from "../../../src/client/FromConfig.ts"
import * as McpClient from "../../../src/client/McpClient.ts"
import * as World from "./AuthWorld.ts"
import * as ProtectedServer from "./ProtectedServer.ts"

const live = (name: string, body: () => Effect.Effect<void, unknown, Scope.Scope | HttpClient.HttpClient>) =>
  it.live(name, () => Effect.scoped(body()).pipe(Effect.provide(NodeHttpClient.layerUndici)), 20_000)

describe("fromConfig with an OAuth provider", () => {
  for (const type of ["http", "sse"] as const) {
    live(`a "${type}" entry signs in on the transport that carries the session`, () =>
      Effect.gen(function*() {
        const world = yield* World.make()
        const server = yield* ProtectedServer.serve(world)
        const user = World.browser()
        const auth = yield* OAuthProvider.make({ redirectUrl: "http://127.0.0.1:1/callback", interaction: user.interaction })
        const transport = yield* FromConfig.make({ type, url: type === "http" ? server.mcpUrl : server.sseUrl, auth })
        const client = yield* McpClient.connect(Effect.succeed(transport), { protocol: "2025-11-25" })
        const result = yield* client.callTool({ name: "whoami" })
        expect(result.structuredContent).toEqual({ scopes: ["read"] })
        expect(yield* transport.selected).toBe(type === "http" ? "streamable-http" : "sse")
        expect(user.opened).toHaveLength(1)
      }))
  }
})
