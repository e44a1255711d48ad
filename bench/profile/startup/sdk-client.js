// The official SDK's stdio client, for comparison (see README, Start-up cost).
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"

export const program = [Client, StdioClientTransport]
