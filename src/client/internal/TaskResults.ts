/**
 * How `McpClient` tells a task from a result (the `io.modelcontextprotocol/tasks`
 * extension) without loading a Schema: the extension's declaration in the
 * client's capabilities, a `tools/call` decoder that hands a `CreateTaskResult`
 * on untouched, and the refusal of one anywhere else. Following a task is
 * TaskFollower's, loaded when the first task arrives.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as McpSchema from "effect/ai/McpSchema"
import { InvalidPayload } from "../../McpError.ts"
import type { Decode } from "./McpCallEngine.ts"

/** `TaskWire.EXTENSION_ID`, here without loading TaskWire's Schemas. */
export const EXTENSION_ID = "io.modelcontextprotocol/tasks"

/** The methods a server may answer with a task. */
const TASK_METHODS: ReadonlySet<string> = new Set(["tools/call"])

/** Whether a server may answer `method` with a task (see `refuse` for the others). */
export const mayAnswerWithTask = (method: string): boolean => TASK_METHODS.has(method)

const CREATED = Symbol.for("effect-mcp-transport/TaskResults/Created")

/** A `CreateTaskResult` as it came, not yet decoded. */
export interface Created {
  readonly [CREATED]: true
  readonly raw: unknown
}

/** Whether a raw result is a `CreateTaskResult` (`resultType: "task"`). */
export const isTaskResult = (raw: unknown): boolean =>
  typeof raw === "object" && raw !== null && (raw as { resultType?: unknown }).resultType === "task"

/** Whether a decoded `tools/call` outcome is a task rather than a result. */
export const isCreated = (value: unknown): value is Created =>
  typeof value === "object" && value !== null && CREATED in value

/** A result decoder that fails on a task: a task is not a valid answer to a method that does not support them. */
export const refuse = <A>(method: string, decode: Decode<A>): Decode<A> => (raw) =>
  isTaskResult(raw)
    ? Effect.fail(
      new InvalidPayload({ method, kind: "result", reason: `a task (resultType "task") is not a valid answer to ${method}` })
    )
    : decode(raw)

/** The `tools/call` decoder of a client that declared the extension: a task is handed on as it came. */
export const orTask = (decode: Decode<McpSchema.CallToolResult>): Decode<McpSchema.CallToolResult | Created> => (raw) =>
  isTaskResult(raw) ? Exit.succeed({ [CREATED]: true, raw }) : decode(raw)

/** The capabilities with the extension declared under `extensions`, beside any other extension. */
export const declare = (capabilities: Readonly<Record<string, unknown>>): Record<string, unknown> => {
  const extensions = capabilities.extensions
  return {
    ...capabilities,
    extensions: {
      ...(typeof extensions === "object" && extensions !== null ? extensions : {}),
      [EXTENSION_ID]: {}
    }
  }
}
