// The official SDK's stdio server, for comparison (see README, Start-up cost).
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"

export const program = [McpServer, StdioServerTransport]
