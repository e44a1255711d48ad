/**
 * The names of the requests an MCP client sends a server, as types: a
 * registration under one of MCP's namespaces must name one of them, so a
 * misspelt MCP method does not compile, while a name outside those
 * namespaces (`"math/add"`) stays open for custom methods.
 *
 * @since 0.1.0
 */

/**
 * The requests MCP defines from client to server, across the revisions this package speaks.
 *
 * @since 0.1.0
 * @category models
 */
export type RequestMethod =
  | "initialize"
  | "ping"
  | "logging/setLevel"
  | "tools/list"
  | "tools/call"
  | "resources/list"
  | "resources/templates/list"
  | "resources/read"
  | "resources/subscribe"
  | "resources/unsubscribe"
  | "prompts/list"
  | "prompts/get"
  | "completion/complete"
  | "tasks/get"
  | "tasks/result"
  | "tasks/list"
  | "tasks/cancel"
  | "server/discover"
  | "subscriptions/listen"

/**
 * The namespaces MCP reserves: a method name in one of them must be a `RequestMethod`.
 *
 * @since 0.1.0
 * @category models
 */
export type ReservedNamespace =
  | "tools"
  | "resources"
  | "prompts"
  | "completion"
  | "logging"
  | "tasks"
  | "server"
  | "subscriptions"
  | "sampling"
  | "elicitation"
  | "roots"
  | "notifications"

/**
 * `M` when it is an MCP request method or a name outside MCP's namespaces;
 * otherwise the MCP methods, so that the misspelt name fails to compile with
 * the list it should have been one of.
 *
 * @example
 * ```ts
 * import type { MethodName } from "effect-mcp-transport/server/Methods"
 *
 * const known: MethodName<"tools/call"> = "tools/call"
 * const custom: MethodName<"math/add"> = "math/add"
 * // const typo: MethodName<"tools/cal"> = "tools/cal" // does not compile
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export type MethodName<M extends string> = M extends RequestMethod ? M
  : M extends `${ReservedNamespace}/${string}` | "initialized" | "pong" ? RequestMethod
  : M
