/**
 * effect-mcp-transport: an Effect-native transport runtime for the Model
 * Context Protocol. Each module is a namespace; the testing kit lives at
 * `effect-mcp-transport/testing`.
 */
/**
 * JSON-RPC 2.0 envelopes as MCP uses them.
 *
 * @since 0.1.0
 * @category modules
 */
export * as JsonRpc from "./JsonRpc.ts"
/**
 * The JSON-RPC 2.0 envelopes of `JsonRpc.ts` as Schemas.
 *
 * @since 0.1.0
 * @category modules
 */
export * as JsonRpcSchema from "./JsonRpcSchema.ts"
/**
 * Typed errors.
 *
 * @since 0.1.0
 * @category modules
 */
export * as McpError from "./McpError.ts"
/**
 * Typed errors of OAuth 2.1 authorization.
 *
 * @since 0.1.0
 * @category modules
 */
export * as AuthError from "./AuthError.ts"
/**
 * The client's errors in four groups (transport, server, protocol, authorization), each with its flat error as `reason`.
 *
 * @since 0.1.0
 * @category modules
 */
export * as McpErrorGroup from "./McpErrorGroup.ts"
/**
 * The service every client transport provides.
 *
 * @since 0.1.0
 * @category modules
 */
export * as ClientTransport from "./client/ClientTransport.ts"
/**
 * The stdio client transport.
 *
 * @since 0.1.0
 * @category modules
 */
export * as StdioClientTransport from "./client/StdioClientTransport.ts"
/**
 * The only platform service the stdio client needs on Node.
 *
 * @since 0.1.0
 * @category modules
 */
export * as NodeSpawner from "./client/NodeSpawner.ts"
/**
 * A client and a server linked in one process, for tests and for embedding a server in an application.
 *
 * @since 0.1.0
 * @category modules
 */
export * as InMemoryTransport from "./bridge/InMemoryTransport.ts"
/**
 * Serves one Handler over the process's stdin and stdout (NDJSON).
 *
 * @since 0.1.0
 * @category modules
 */
export * as StdioServerTransport from "./server/StdioServerTransport.ts"
export type { Handler, HandlerContext } from "./server/Handler.ts"
/**
 * Mounts one MCP `Handler` over HTTP.
 *
 * @since 0.1.0
 * @category modules
 */
export * as HttpServerTransport from "./server/HttpServerTransport.ts"
/**
 * Replay storage for resumable SSE streams.
 *
 * @since 0.1.0
 * @category modules
 */
export * as EventStore from "./server/EventStore.ts"
/**
 * Streamable HTTP client transport (MCP 2025-03-26 … 2025-11-25).
 *
 * @since 0.1.0
 * @category modules
 */
export * as StreamableHttpClientTransport from "./client/StreamableHttpClientTransport.ts"
/**
 * Legacy HTTP+SSE client transport (MCP 2024-11-05).
 *
 * @since 0.1.0
 * @category modules
 */
export * as SseClientTransport from "./client/SseClientTransport.ts"
/**
 * One MCP request on a Streamable HTTP endpoint, stateless revision first, with nothing left open.
 *
 * @since 0.1.0
 * @category modules
 */
export * as OneShot from "./client/OneShot.ts"
/**
 * Transport selection from a server's configuration entry (the common `mcpServers` shape).
 *
 * @since 0.1.0
 * @category modules
 */
export * as FromConfig from "./client/FromConfig.ts"
/**
 * The MCP protocol revisions this runtime speaks, shared by the client's handshake and the server's negotiation so the two can never disagree.
 *
 * @since 0.1.0
 * @category modules
 */
export * as ProtocolVersion from "./ProtocolVersion.ts"
/**
 * The stateless era's request metadata: `_meta` keys, routing headers, header value encoding, `x-mcp-header` parameters.
 *
 * @since 0.1.0
 * @category modules
 */
export * as RequestMeta from "./RequestMeta.ts"
/**
 * The defaults both sides share.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Defaults from "./Defaults.ts"
/**
 * OTLP/HTTP export of the spans servers and clients record (OpenTelemetry's MCP conventions), and of logs and metrics.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Telemetry from "./Telemetry.ts"
/**
 * The MCP protocol layer over any client transport.
 *
 * @since 0.1.0
 * @category modules
 */
export * as McpClient from "./client/McpClient.ts"
/**
 * Notifications a server sends a client, decoded once into one tagged union so that subscribers match on `_tag` instead of re-parsing method strings.
 *
 * @since 0.1.0
 * @category modules
 */
export * as ServerNotification from "./client/ServerNotification.ts"
/**
 * A tool's declared failure, decoded back into its typed value.
 *
 * @since 0.1.0
 * @category modules
 */
export * as ToolFailure from "./client/ToolFailure.ts"
/**
 * A task a server runs a tool call as (the tasks extension), seen from the client: its handle.
 *
 * @since 0.1.0
 * @category modules
 */
export * as TaskHandle from "./client/TaskHandle.ts"
/**
 * Many MCP servers behind one object.
 *
 * @since 0.1.0
 * @category modules
 */
export * as McpManager from "./client/McpManager.ts"
/**
 * The tools of MCP servers (one client, or every server of a manager) as an `effect/ai` toolkit a `LanguageModel` can call.
 *
 * @since 0.1.0
 * @category modules
 */
export * as AiToolkit from "./client/AiToolkit.ts"
/**
 * The server side of the MCP lifecycle, as a `Handler` any server transport can mount (stdio, in-memory, HTTP).
 *
 * @since 0.1.0
 * @category modules
 */
export * as McpServer from "./server/McpServer.ts"
/**
 * A method table.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Router from "./server/Router.ts"
/**
 * Serves any MCP server over the other transport.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Bridge from "./bridge/Bridge.ts"
