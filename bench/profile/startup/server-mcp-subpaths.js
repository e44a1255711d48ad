// A stdio server with McpServer on module subpaths, with NodeStdio (see README, Start-up cost).
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeStdio from "@effect/platform-node/NodeStdio"
import * as Effect from "effect/Effect"
import * as McpServer from "effect-mcp-transport/server/McpServer"
import * as StdioServerTransport from "effect-mcp-transport/server/StdioServerTransport"

export const program = [Effect, NodeRuntime, NodeStdio, McpServer, StdioServerTransport]
