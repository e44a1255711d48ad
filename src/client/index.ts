/**
 * The client side of effect-mcp-transport, importable on its own as
 * `effect-mcp-transport/client`: the transport service, the stdio transport
 * (with the one Node service it needs), the Streamable HTTP, legacy SSE and
 * in-memory transports, configuration-driven connection, the MCP client with
 * its lifecycle, and the many-servers manager. The same namespaces are
 * re-exported by the package root.
 */
/**
 * The service every client transport provides.
 *
 * @since 0.1.0
 * @category modules
 */
export * as ClientTransport from "./ClientTransport.ts"
/**
 * The stdio client transport.
 *
 * @since 0.1.0
 * @category modules
 */
export * as StdioClientTransport from "./StdioClientTransport.ts"
/**
 * The only platform service the stdio client needs on Node.
 *
 * @since 0.1.0
 * @category modules
 */
export * as NodeSpawner from "./NodeSpawner.ts"
/**
 * Streamable HTTP client transport (MCP 2025-03-26 … 2025-11-25).
 *
 * @since 0.1.0
 * @category modules
 */
export * as StreamableHttpClientTransport from "./StreamableHttpClientTransport.ts"
/**
 * Legacy HTTP+SSE client transport (MCP 2024-11-05).
 *
 * @since 0.1.0
 * @category modules
 */
export * as SseClientTransport from "./SseClientTransport.ts"
/**
 * One MCP request on a Streamable HTTP endpoint, stateless revision first, with nothing left open.
 *
 * @since 0.1.0
 * @category modules
 */
export * as OneShot from "./OneShot.ts"
/**
 * Transport selection from a server's configuration entry (the common `mcpServers` shape).
 *
 * @since 0.1.0
 * @category modules
 */
export * as FromConfig from "./FromConfig.ts"
/**
 * The MCP protocol layer over any client transport.
 *
 * @since 0.1.0
 * @category modules
 */
export * as McpClient from "./McpClient.ts"
/**
 * Notifications a server sends a client, decoded once into one tagged union so that subscribers match on `_tag` instead of re-parsing method strings.
 *
 * @since 0.1.0
 * @category modules
 */
export * as ServerNotification from "./ServerNotification.ts"
/**
 * A tool's declared failure, decoded back into its typed value.
 *
 * @since 0.1.0
 * @category modules
 */
export * as ToolFailure from "./ToolFailure.ts"
/**
 * A task a server runs a tool call as (the tasks extension), seen from the client: its handle.
 *
 * @since 0.1.0
 * @category modules
 */
export * as TaskHandle from "./TaskHandle.ts"
/**
 * Many MCP servers behind one object.
 *
 * @since 0.1.0
 * @category modules
 */
export * as McpManager from "./McpManager.ts"
/**
 * The tools of MCP servers (one client, or every server of a manager) as an `effect/ai` toolkit a `LanguageModel` can call.
 *
 * @since 0.1.0
 * @category modules
 */
export * as AiToolkit from "./AiToolkit.ts"
