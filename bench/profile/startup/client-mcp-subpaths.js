// The stdio client with McpClient on module subpaths, with NodeSpawner (see README, Start-up cost).
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as McpClient from "effect-mcp-transport/client/McpClient"
import * as NodeSpawner from "effect-mcp-transport/client/NodeSpawner"
import * as StdioClientTransport from "effect-mcp-transport/client/StdioClientTransport"

export const program = Effect.void.pipe(Effect.provide(Layer.empty), () => [McpClient, StdioClientTransport, NodeSpawner])
