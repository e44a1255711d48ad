/**
 * Tools, resources and prompts that change while the server serves. The
 * handle `McpServer.toHandler` builds carries them as `definitions`, for
 * every kind whose `listChanged` the server declares in `capabilities`:
 * add entries with the same steps that define them (`Tool.add`,
 * `Tool.addJsonSchema`, `Resource.add`, `Resource.template`, `Prompt.add`),
 * remove them, disable and enable them (see `McpServer.Definitions`).
 * `toHandler` here is the shortcut that declares `listChanged` for every
 * kind the server has entries of.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Catalogue from "./internal/Catalogue.ts"
import * as McpServer from "./McpServer.ts"
import { isRecord } from "../internal/Records.ts"

/**
 * The kinds of entries that change, named as `DefinitionError` names them; a
 * `resourceTemplate` is named by its URI template.
 *
 * @since 0.1.0
 * @category models
 */
export type Kind = McpServer.DefinitionKind

/**
 * Changes the entries of a serving server: `McpServer.Definitions`.
 *
 * @since 0.1.0
 * @category models
 */
export type Definitions<R> = McpServer.Definitions<R>

/**
 * What `toHandler` builds: `McpServer.toHandler`'s handle, whose
 * `definitions` change every kind the server has entries of.
 *
 * @since 0.1.0
 * @category models
 */
export type LiveServerHandle<R> = McpServer.ServerHandle<R>

/**
 * Builds the handler of `server` as `McpServer.toHandler` does, with
 * `listChanged: true` declared for each kind (tools, resources with their
 * templates, prompts) the server has an entry of, so that its
 * `definitions` can change all of them. A kind whose methods the server
 * serves itself (`McpServer.method`) cannot change.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import * as Schema from "effect/Schema"
 * import * as Definitions from "effect-mcp-transport/server/Definitions"
 * import * as McpServer from "effect-mcp-transport/server/McpServer"
 * import * as Tool from "effect-mcp-transport/server/Tool"
 *
 * const server = McpServer.make({ serverInfo: { name: "live", version: "1.0.0" } }).pipe(
 *   Tool.add("echo", { parameters: { text: Schema.String } }, ({ text }) => Effect.succeed(text))
 * )
 *
 * const program = Effect.gen(function*() {
 *   const { definitions } = yield* Definitions.toHandler(server)
 *   yield* definitions.add(Tool.add("shout", { parameters: { text: Schema.String } }, ({ text }) => Effect.succeed(text.toUpperCase())))
 *   yield* definitions.disable("tool", "echo")
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const toHandler = <R>(server: McpServer.McpServer<R>): Effect.Effect<LiveServerHandle<R>, never, Scope.Scope> =>
  Effect.suspend(() => {
    const catalogue = Catalogue.of(server)
    const capabilities: Record<string, unknown> = { ...server.options.capabilities }
    const declare = (capability: string, has: boolean) => {
      if (!has) return
      const base = capabilities[capability]
      capabilities[capability] = { ...(isRecord(base) ? base : {}), listChanged: true }
    }
    declare("tools", catalogue.tools.size > 0)
    declare("resources", catalogue.resources.size > 0 || catalogue.templates.size > 0)
    declare("prompts", catalogue.prompts.size > 0)
    const declared = Object.assign(Object.create(Object.getPrototypeOf(server)), server, {
      options: { ...server.options, capabilities }
    }) as McpServer.McpServer<R>
    return McpServer.toHandler(declared)
  })
