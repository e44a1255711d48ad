// The imports of README.md's first quick start, on module subpaths (the quick-start workload runs the whole program).
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as McpClient from "effect-mcp-transport/client/McpClient"
import * as NodeSpawner from "effect-mcp-transport/client/NodeSpawner"
import * as StdioClientTransport from "effect-mcp-transport/client/StdioClientTransport"

export const program = [NodeRuntime, Console, Effect, McpClient, NodeSpawner, StdioClientTransport]
