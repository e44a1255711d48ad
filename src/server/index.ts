/**
 * The server side of effect-mcp-transport, importable on its own as
 * `effect-mcp-transport/server`: the handler type every server transport
 * mounts, the stdio and HTTP server transports with their replay store, and
 * the MCP server lifecycle with its method router. The same namespaces are
 * re-exported by the package root.
 */
export type { Handler, HandlerContext } from "./Handler.ts"
export * as StdioServerTransport from "./StdioServerTransport.ts"
export * as HttpServerTransport from "./HttpServerTransport.ts"
export * as EventStore from "./EventStore.ts"
export * as McpServer from "./McpServer.ts"
export * as Router from "./Router.ts"
