/**
 * The client side of effect-mcp-transport, importable on its own as
 * `effect-mcp-transport/client`: the transport service, the stdio transport
 * (with the one Node service it needs), the Streamable HTTP, legacy SSE and
 * in-memory transports, configuration-driven connection, the MCP client with
 * its lifecycle, and the many-servers manager. The same namespaces are
 * re-exported by the package root.
 */
export * as ClientTransport from "./ClientTransport.ts"
export * as StdioClientTransport from "./StdioClientTransport.ts"
export * as NodeSpawner from "./NodeSpawner.ts"
export * as StreamableHttpClientTransport from "./StreamableHttpClientTransport.ts"
export * as SseClientTransport from "./SseClientTransport.ts"
export * as FromConfig from "./fromConfig.ts"
export * as McpClient from "./McpClient.ts"
export * as ServerNotification from "./ServerNotification.ts"
export * as McpManager from "./McpManager.ts"
