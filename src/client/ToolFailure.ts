/**
 * A tool's declared failure, decoded back into its typed value on the client.
 *
 * A server whose tool declares a `failure` Schema answers such a failure as a
 * tool error whose only content is the failure's JSON text. `decode(schema)`
 * turns that answer back into the typed failure, in the error channel; any
 * other result, tool errors that do not decode included, passes unchanged.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as McpSchema from "effect/ai/McpSchema"

const failureText = (result: McpSchema.CallToolResult): string | undefined => {
  if (result.isError !== true || result.content.length !== 1) return undefined
  const [block] = result.content
  return block !== undefined && block.type === "text" ? block.text : undefined
}

const parse = (text: string): { readonly json: unknown } | undefined => {
  try {
    return { json: JSON.parse(text) }
  } catch {
    return undefined
  }
}

/**
 * Fails with the tool's declared failure when the result is one; succeeds
 * with the result otherwise.
 *
 * @example
 * ```ts
 * import * as Schema from "effect/Schema"
 * import type * as McpClient from "effect-mcp-transport/client/McpClient"
 * import * as ToolFailure from "effect-mcp-transport/client/ToolFailure"
 *
 * class DivisionByZero extends Schema.TaggedError<DivisionByZero>()("DivisionByZero", {}) {}
 *
 * declare const client: McpClient.McpClientShape
 * // Effect<CallToolResult, McpClientError | DivisionByZero>
 * const divided = client.callTool({ name: "divide", arguments: { a: 1, b: 0 } }).pipe(
 *   ToolFailure.decode(DivisionByZero)
 * )
 * ```
 *
 * @since 0.1.0
 * @category decoding
 */
export const decode = <F extends Schema.Top>(schema: F) => {
  const decodeJson = Schema.decodeUnknownEffect(Schema.toCodecJson(schema)) as (
    json: unknown
  ) => Effect.Effect<F["Type"], Schema.SchemaError, F["DecodingServices"]>
  return <E, R>(
    self: Effect.Effect<McpSchema.CallToolResult, E, R>
  ): Effect.Effect<McpSchema.CallToolResult, E | F["Type"], R | F["DecodingServices"]> =>
    Effect.flatMap(self, (result) => {
      const text = failureText(result)
      const parsed = text === undefined ? undefined : parse(text)
      if (parsed === undefined) return Effect.succeed(result)
      return Effect.matchEffect(decodeJson(parsed.json), {
        onFailure: () => Effect.succeed(result),
        onSuccess: (failure) => Effect.fail(failure)
      })
    })
}
