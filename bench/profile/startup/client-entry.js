// The same stdio client's imports from the `client` entry point, with NodeSpawner (see README, Start-up cost).
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { NodeSpawner, StdioClientTransport } from "effect-mcp-transport/client"

export const program = Effect.void.pipe(Effect.provide(Layer.empty), () => [StdioClientTransport, NodeSpawner])
