/**
 * Tool names across servers: each server's tools are offered as
 * `<server><separator><tool>`, unique across servers as long as no server
 * name contains the separator, and a call by that name is routed back to its
 * server and tool.
 *
 * @since 0.1.0
 */
import type * as McpSchema from "effect/ai/McpSchema"
import type { ManagedServer } from "./ManagedServer.ts"

/**
 * One tool of one server, under its name across servers.
 *
 * @since 0.1.0
 * @category models
 */
export interface RoutedTool {
  /** `<server><separator><tool>`: unique across servers. */
  readonly name: string
  readonly server: string
  readonly tool: McpSchema.Tool
  /** From the cache of the last good listing: the server is not connected yet. */
  readonly cached: boolean
}

/**
 * Whether `server` can prefix tool names: it must not contain the separator,
 * or its names could not be split back unambiguously.
 *
 * @since 0.1.0
 * @category utils
 */
export const canPrefix = (server: string, separator: string): boolean => !server.includes(separator)

/**
 * The server and tool a name across servers stands for; undefined when the
 * name has no server prefix or names a server not in `servers`.
 *
 * @since 0.1.0
 * @category utils
 */
export const route = (
  name: string,
  separator: string,
  servers: { readonly has: (server: string) => boolean }
): { readonly server: string; readonly tool: string } | undefined => {
  const i = name.indexOf(separator)
  if (i <= 0) return undefined
  const server = name.slice(0, i)
  return servers.has(server) ? { server, tool: name.slice(i + separator.length) } : undefined
}

/**
 * Every server's current tools under their names across servers, servers in
 * the order given.
 *
 * @since 0.1.0
 * @category utils
 */
export const aggregate = (servers: Iterable<ManagedServer>, separator: string): Array<RoutedTool> =>
  Array.from(servers).flatMap((server) =>
    server.tools.map((tool) => ({
      name: `${server.name}${separator}${tool.name}`,
      server: server.name,
      tool,
      cached: server.toolsCached
    }))
  )
