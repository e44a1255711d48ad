/**
 * effect-mcp-transport: an Effect-native transport runtime for the Model
 * Context Protocol. Each module is a namespace; the testing kit lives at
 * `effect-mcp-transport/testing`.
 */
export * as JsonRpc from "./JsonRpc.ts"
export * as JsonRpcSchema from "./JsonRpcSchema.ts"
export * as McpError from "./McpError.ts"
export * as ClientTransport from "./client/ClientTransport.ts"
export * as StdioClientTransport from "./client/StdioClientTransport.ts"
export * as NodeSpawner from "./client/NodeSpawner.ts"
export * as InMemoryTransport from "./bridge/InMemoryTransport.ts"
export * as StdioServerTransport from "./server/StdioServerTransport.ts"
export type { Handler, HandlerContext } from "./server/Handler.ts"
export * as HttpServerTransport from "./server/HttpServerTransport.ts"
export * as EventStore from "./server/EventStore.ts"
export * as StreamableHttpClientTransport from "./client/StreamableHttpClientTransport.ts"
export * as SseClientTransport from "./client/SseClientTransport.ts"
export * as FromConfig from "./client/fromConfig.ts"
export * as ProtocolVersion from "./ProtocolVersion.ts"
export * as Defaults from "./Defaults.ts"
export * as McpClient from "./client/McpClient.ts"
export * as ServerNotification from "./client/ServerNotification.ts"
export * as McpManager from "./client/McpManager.ts"
export * as McpServer from "./server/McpServer.ts"
export * as Router from "./server/Router.ts"
export * as Bridge from "./bridge/Bridge.ts"
