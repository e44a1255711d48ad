/**
 * The server side of effect-mcp-transport, importable on its own as
 * `effect-mcp-transport/server`: the handler type every server transport
 * mounts, the stdio and HTTP server transports with their replay store, and
 * the MCP server lifecycle with its method router. The same namespaces are
 * re-exported by the package root.
 */
export type { Handler, HandlerContext } from "./Handler.ts"
/**
 * Serves one Handler over the process's stdin and stdout (NDJSON).
 *
 * @since 0.1.0
 * @category modules
 */
export * as StdioServerTransport from "./StdioServerTransport.ts"
/**
 * Mounts one MCP `Handler` over HTTP.
 *
 * @since 0.1.0
 * @category modules
 */
export * as HttpServerTransport from "./HttpServerTransport.ts"
/**
 * Replay storage for resumable SSE streams.
 *
 * @since 0.1.0
 * @category modules
 */
export * as EventStore from "./EventStore.ts"
/**
 * The server side of the MCP lifecycle, as a `Handler` any server transport can mount (stdio, in-memory, HTTP).
 *
 * @since 0.1.0
 * @category modules
 */
export * as McpServer from "./McpServer.ts"
/**
 * A method table.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Router from "./Router.ts"
/**
 * Tools defined from Effect Schemas, dispatched by name.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Tool from "./Tool.ts"
/**
 * Resources at fixed URIs and URI templates, with typed variables and completions.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Resource from "./Resource.ts"
/**
 * Prompts with Schema-decoded arguments and completions.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Prompt from "./Prompt.ts"
/**
 * JSON Schema 2020-12 from Effect Schemas, as MCP clients and LLM providers accept it.
 *
 * @since 0.1.0
 * @category modules
 */
export * as JsonSchema from "./JsonSchema.ts"
/**
 * The error a server definition is refused with while it is built.
 *
 * @since 0.1.0
 * @category modules
 */
export * as DefinitionError from "./DefinitionError.ts"
/**
 * The MCP request method names, as types.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Methods from "./Methods.ts"
/**
 * Middleware around every request a `McpServer` serves: authentication, rate limits, logging, services.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Middleware from "./Middleware.ts"

/**
 * Tools that run as tasks (the `io.modelcontextprotocol/tasks` extension): `TaskSupport`, `escalate`.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Task from "./Task.ts"

/**
 * Where a server keeps its tasks: the `TaskStore` service, its record and error, the in-memory store.
 *
 * @since 0.1.0
 * @category modules
 */
export * as TaskStore from "./TaskStore.ts"
