/**
 * Tools, resources and prompts that change while the server serves.
 * `Definitions.toHandler` builds the handler of a server definition, as
 * `McpServer.toHandler` does, with a `definitions` service next to it: add
 * entries with the same steps that define them (`Tool.add`,
 * `Resource.add`, `Resource.template`, `Prompt.add`), remove them, disable
 * and enable them. Each change is seen whole by the next request, and is
 * announced with the list-changed notification of its kind to every
 * initialized session (handshake era) and every `subscriptions/listen` that
 * asked for that kind (stateless era).
 *
 * @since 0.2.0
 */
import * as Effect from "effect/Effect"
import type { DefinitionError } from "./DefinitionError.ts"
import * as LiveCatalogue from "./internal/LiveCatalogue.ts"
import * as McpServer from "./McpServer.ts"

/**
 * The kinds of entries that change, named as `DefinitionError` names them; a
 * `resourceTemplate` is named by its URI template.
 *
 * @since 0.2.0
 * @category models
 */
export type Kind = LiveCatalogue.Kind

/**
 * Changes the entries of a serving server. Each operation fails with a
 * `DefinitionError` and changes nothing when it cannot be done: a name
 * already defined (`add`), a name not defined (`remove`, `enable`,
 * `disable`), or an entry of a kind the server cannot change (see
 * `toHandler`). A call already running is not affected by a change.
 *
 * @since 0.2.0
 * @category models
 */
export interface Definitions<R> {
  /**
   * Adds what a definition step adds, e.g. `Tool.add("shout", {…}, handler)`;
   * several steps composed into one (`flow(Tool.add(…), Prompt.add(…))`) are
   * added together or not at all. The step's handlers may need only what
   * the server's handlers need.
   */
  readonly add: (step: (server: McpServer.McpServer<never>) => McpServer.McpServer<R>) => Effect.Effect<void, DefinitionError>
  /** Removes an entry: gone from its list, and unknown to new calls. */
  readonly remove: (kind: Kind, name: string) => Effect.Effect<void, DefinitionError>
  /**
   * Hides an entry: absent from its list and answered as unknown (a tool:
   * -32602; a resource: not found) until `enable`. Disabling a disabled
   * entry changes nothing and announces nothing.
   */
  readonly disable: (kind: Kind, name: string) => Effect.Effect<void, DefinitionError>
  /** Shows a disabled entry again; enabling an enabled one changes nothing. */
  readonly enable: (kind: Kind, name: string) => Effect.Effect<void, DefinitionError>
}

/**
 * What `toHandler` builds: `McpServer.toHandler`'s handle and the
 * definitions its handler serves.
 *
 * @since 0.2.0
 * @category models
 */
export interface LiveServerHandle<R> extends McpServer.ServerHandle<R> {
  readonly definitions: Definitions<R>
}

/**
 * Builds the handler of `server` with definitions that change while it
 * serves. A kind (tools, resources with their templates, prompts) can
 * change when the server has an entry of it, or declares that kind's
 * `listChanged` in `capabilities` (to start with none); those kinds declare
 * `listChanged: true` and are served even while empty. A kind whose
 * methods the server serves itself (`McpServer.method`) cannot change.
 * Stateless-era list results carry `ttlMs: 0`, whatever `resultCache`
 * says, so that no client keeps a list past a change.
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
 * @since 0.2.0
 * @category constructors
 */
export const toHandler = <R>(server: McpServer.McpServer<R>): Effect.Effect<LiveServerHandle<R>> =>
  Effect.suspend(() => {
    const live = LiveCatalogue.make(server)
    return Effect.map(McpServer.toHandler(live.server), (handle): LiveServerHandle<R> => {
      const change = (c: LiveCatalogue.Change<R>) =>
        Effect.flatMap(live.apply(c), (notifications) =>
          Effect.forEach(notifications, (method) => handle.notifyAll(method), { discard: true }))
      return {
        ...handle,
        definitions: {
          add: (step) => change({ _tag: "Add", step: step as (server: McpServer.McpServer<any>) => McpServer.McpServer<R> }),
          remove: (kind, name) => change({ _tag: "Remove", kind, name }),
          disable: (kind, name) => change({ _tag: "Disable", kind, name }),
          enable: (kind, name) => change({ _tag: "Enable", kind, name })
        }
      }
    })
  })
