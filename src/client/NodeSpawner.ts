/**
 * The only platform service the stdio client needs on Node: the child-process
 * spawner, with the file-system and path services it uses itself.
 *
 * `NodeServices.layer` provides the same spawner, but also loads the terminal
 * and stdio services; a stdio client that provides this layer instead starts
 * about 90 ms of CPU sooner (`npx node bench/profile/import-cost.ts 7
 * effect-mcp-transport/client/NodeSpawner @effect/platform-node/NodeServices`:
 * 215 against 308 ms of CPU to import).
 */
import * as NodeChildProcessSpawner from "@effect/platform-node/NodeChildProcessSpawner"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Layer from "effect/Layer"
import type { ChildProcessSpawner } from "effect/process"

/**
 * The child-process spawner the stdio client needs, for Node.
 *
 * @example
 * ```ts
 * import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
 * import * as Effect from "effect/Effect"
 * import * as McpClient from "effect-mcp-transport/client/McpClient"
 * import * as NodeSpawner from "effect-mcp-transport/client/NodeSpawner"
 * import * as StdioClientTransport from "effect-mcp-transport/client/StdioClientTransport"
 *
 * const program = Effect.gen(function*() {
 *   const client = yield* McpClient.connect(StdioClientTransport.make({ command: "node", args: ["server.js"] }))
 *   yield* Effect.log(yield* client.listAllTools())
 * })
 *
 * program.pipe(Effect.scoped, Effect.provide(NodeSpawner.layer), NodeRuntime.runMain)
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<ChildProcessSpawner.ChildProcessSpawner> = NodeChildProcessSpawner.layer.pipe(
  Layer.provide(Layer.mergeAll(NodeFileSystem.layer, NodePath.layer))
)
