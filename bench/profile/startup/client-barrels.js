// A stdio client's imports written with the package barrels and NodeServices (see README, Start-up cost).
import { NodeServices } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { StdioClientTransport } from "effect-mcp-transport"

export const program = Effect.void.pipe(Effect.provide(Layer.empty), () => [StdioClientTransport, NodeServices])
