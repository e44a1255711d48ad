/**
 * The library's own HTTP server transport as an MCP server protected by an
 * AuthWorld's authorization server: Streamable HTTP at /mcp (both eras) and
 * legacy HTTP+SSE at /mcp/sse with POSTs to /mcp/messages, so that the one
 * resource, /mcp, covers every path a client reaches. Tokens count when the
 * world issued them and has not revoked or expired them; the tool `admin`
 * needs the scope `admin`. `tools/list` lists `whoami`; any other request is
 * answered with what the server knows of the caller.
 */
import { Context, Effect, Layer, Option, type Scope } from "effect"
import * as JsonRpc from "../../../src/JsonRpc.ts"
import { InvalidToken, type TokenVerifierShape } from "../../../src/server/auth/TokenVerifier.ts"
import type { Handler, HandlerContext } from "../../../src/server/Handler.ts"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import type { AuthWorld } from "./AuthWorld.ts"

export interface ProtectedServer {
  readonly mcpUrl: string
  readonly sseUrl: string
}

const verifier = (world: AuthWorld): TokenVerifierShape => ({
  verify: (token) =>
    Effect.suspend(() => {
      const known = world.accessTokens.get(token)
      if (known === undefined || known.expired) return Effect.fail(new InvalidToken({ reason: "unknown or expired token" }))
      return Effect.succeed({
        subject: "alice",
        scopes: known.scopes,
        clientId: undefined,
        issuer: world.issuer,
        expiresAt: undefined,
        claims: {}
      })
    })
})

const whoami: Handler = Object.assign(
  (message: JsonRpc.JsonRpcRequest | JsonRpc.JsonRpcNotification, ctx: HandlerContext) =>
    Effect.succeed(
      !("id" in message) ? null : message.method === "initialize"
        ? JsonRpc.success(message.id, {
          protocolVersion: (message.params as { protocolVersion: string }).protocolVersion,
          capabilities: { tools: {} },
          serverInfo: { name: "protected", version: "1.0.0" }
        })
        : message.method === "tools/list"
        ? JsonRpc.success(message.id, { tools: [{ name: "whoami", inputSchema: { type: "object" } }] })
        : JsonRpc.success(message.id, {
          content: [{ type: "text", text: message.method }],
          structuredContent: { scopes: ctx.auth?.scopes }
        })
    ),
  { stateless: true }
)

/** `eras`: which protocol eras /mcp serves (default both). */
export const serve = (
  world: AuthWorld,
  eras: HttpServerTransport.Options["eras"] = "both"
): Effect.Effect<ProtectedServer, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const context = yield* Layer.build(HttpServerTransport.layer(whoami, {
      port: 0,
      eras,
      legacySse: true,
      legacySsePath: "/mcp/sse",
      legacyMessagesPath: "/mcp/messages",
      authorization: {
        verifier: verifier(world),
        authorizationServers: [world.issuer],
        toolScopes: { admin: ["admin"] },
        scopesSupported: ["read"]
      }
    }))
    const transport = Context.get(context, HttpServerTransport.HttpServerTransport)
    const mcpUrl = Option.getOrThrow(transport.url)
    return { mcpUrl, sseUrl: `${mcpUrl}/sse` }
  })
