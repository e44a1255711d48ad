/**
 * The error a server definition is refused with while it is being built: a
 * name given twice, a method registered twice, a schema MCP cannot carry,
 * an option of `McpServer.make` it cannot serve with (a short signing key).
 * It is thrown by the definition step that caused it (`McpServer.make`,
 * `McpServer.method`, `Tool.add`, `Resource.add`, …), so a faulty server fails when its
 * definition is evaluated, before it serves anything.
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"

/**
 * What a definition step refused: `kind` names the table (`method`, `tool`,
 * `resource`, `resourceTemplate`, `prompt`) or `option` (an option of
 * `McpServer.make`), `name` the entry or option, `reason` why.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import { DefinitionError } from "effect-mcp-transport/server/DefinitionError"
 * import * as McpServer from "effect-mcp-transport/server/McpServer"
 *
 * try {
 *   McpServer.make({ serverInfo: { name: "twice", version: "1.0.0" } }).pipe(
 *     McpServer.method("tools/list", {}, () => Effect.succeed({ tools: [] })),
 *     McpServer.method("tools/list", {}, () => Effect.succeed({ tools: [] }))
 *   )
 * } catch (e) {
 *   if (e instanceof DefinitionError) console.log(e.message) // method "tools/list" is already defined
 * }
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class DefinitionError extends Data.TaggedError("DefinitionError")<{
  readonly kind: "method" | "tool" | "resource" | "resourceTemplate" | "prompt" | "option"
  readonly name: string
  readonly reason: string
}> {
  override get message(): string {
    return `${this.kind} ${JSON.stringify(this.name)} ${this.reason}`
  }
}

/**
 * The error for a name given twice.
 *
 * @since 0.1.0
 * @category constructors
 */
export const duplicate = (kind: DefinitionError["kind"], name: string): DefinitionError =>
  new DefinitionError({ kind, name, reason: "is already defined" })
