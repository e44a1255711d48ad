// A stdio server's imports written with the package barrels and NodeServices (see README, Start-up cost).
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Effect } from "effect"
import { StdioServerTransport } from "effect-mcp-transport"

export const program = [Effect, NodeRuntime, NodeServices, StdioServerTransport]
