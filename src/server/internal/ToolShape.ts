/**
 * What a tool is made of, as its author writes it: the options of `add` and
 * `addJsonSchema`, its parameters, what its handler succeeds and fails with,
 * and the results and hints MCP sends. Types only, re-exported by `Tool`.
 */
import type * as Schema from "effect/Schema"
import type { RpcError } from "../../McpError.ts"
import type * as JsonSchema from "../JsonSchema.ts"
import type { ClientCallError } from "../McpServer.ts"
import type * as Task from "../Task.ts"

/**
 * The behaviour hints of a tool (MCP `ToolAnnotations`); a client may show
 * them, never trust them.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolAnnotations {
  readonly title?: string | undefined
  /** The tool does not change its environment. */
  readonly readOnlyHint?: boolean | undefined
  /** The tool may destroy or overwrite (meaningful when not read-only). */
  readonly destructiveHint?: boolean | undefined
  /** Calling it again with the same arguments changes nothing more. */
  readonly idempotentHint?: boolean | undefined
  /** The tool reaches outside a closed world (the web, other systems). */
  readonly openWorldHint?: boolean | undefined
}

/**
 * One block of a tool result's `content`, as MCP sends it (`text`, `image`,
 * `audio`, `resource_link`, `resource`).
 *
 * @since 0.1.0
 * @category models
 */
export interface ContentBlock {
  readonly type: string
  readonly [key: string]: unknown
}

/**
 * What a handler of a tool with no `success` Schema returns: a string (sent
 * as one text block) or a whole `CallToolResult`.
 *
 * @since 0.1.0
 * @category models
 */
export type ToolResult = string | {
  readonly content: ReadonlyArray<ContentBlock>
  readonly structuredContent?: { readonly [key: string]: unknown } | undefined
  readonly isError?: boolean | undefined
  readonly _meta?: { readonly [key: string]: unknown } | undefined
}

/**
 * The parameters of a tool: the fields of its arguments object, or a Schema
 * whose JSON form is an object.
 *
 * @since 0.1.0
 * @category models
 */
export type Parameters = Schema.Struct.Fields | Schema.Top

/**
 * The Schema of `Parameters`.
 *
 * @since 0.1.0
 * @category models
 */
export type ParametersSchema<P extends Parameters> = P extends Schema.Top ? P
  : P extends Schema.Struct.Fields ? Schema.Struct<P>
  : never

/**
 * How a tool is described and checked.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolOptions<P extends Parameters, S extends Schema.Top, F extends Schema.Top> {
  /** What the tool does, for the model. Default: none. */
  readonly description?: string | undefined
  /** A name for people. Default: none. */
  readonly title?: string | undefined
  /**
   * The arguments: struct fields (`{ a: Schema.Number }`) or a Schema with an
   * object root. Default: no arguments. Mark a parameter with
   * `JsonSchema.header(name)` to have stateless-era HTTP clients mirror it
   * into `Mcp-Param-{name}`.
   */
  readonly parameters?: P | undefined
  /**
   * The result's Schema. Given: the handler returns its type, sent as
   * `structuredContent` (wrapped as `{ result }` when its JSON form is not an
   * object) with a text copy, and listed as `outputSchema`. Default: the
   * handler returns a `ToolResult`.
   */
  readonly success?: S | undefined
  /**
   * The text copy of a typed result (with `success` only), for clients that
   * read text. Default: the result's JSON, as MCP recommends.
   */
  readonly text?: ((value: S["Type"]) => string) | undefined
  /**
   * The Schema of the failures that are answers, not faults: a handler
   * failure it accepts is sent as a tool error with its JSON as text.
   * Default: none (every failure but `RpcError` is -32603).
   */
  readonly failure?: F | undefined
  /** Behaviour hints. Default: none. */
  readonly annotations?: ToolAnnotations | undefined
  /** Sent as the tool's `_meta`. Default: none. */
  readonly _meta?: { readonly [key: string]: unknown } | undefined
  /** Numbers may be non-finite (see `JsonSchema.JsonSchemaOptions`). Default `false`. */
  readonly nonFinite?: boolean | undefined
  /**
   * Whether a call may run as a task (tasks extension): `"forbidden"`
   * (default) never; `"optional"` when the client declared the extension,
   * inline otherwise; `"required"` only as a task (a client that did not
   * declare the extension gets -32021). Listed as `execution.taskSupport`
   * in the handshake era.
   */
  readonly taskSupport?: Task.TaskSupport | undefined
  /**
   * When a call of a task tool becomes a task: `"call"` (default) the whole
   * handler runs as one; `"escalate"` the handler runs in the request (it
   * may ask the client through `input_required` rounds first) and turns its
   * rest into a task with `Task.escalate`.
   */
  readonly taskStart?: "call" | "escalate" | undefined
}

/**
 * What a tool's handler succeeds with: `success`'s type, or a `ToolResult` without one.
 *
 * @since 0.1.0
 * @category models
 */
export type Success<S extends Schema.Top> = [S] extends [never] ? ToolResult : S["Type"]

/**
 * What a tool's handler may fail with: a value of its `failure` Schema (sent as a tool error), an
 * `RpcError` (sent as that JSON-RPC error), or what asking the client failed with (`ClientCallError`:
 * a capability the client did not declare is sent as -32021 naming it, the rest as -32603). Anything
 * else is a fault: map it to a declared failure, or make it a defect (`Effect.orDie`, answered -32603
 * without details) on purpose.
 *
 * @since 0.1.0
 * @category models
 */
export type Failure<F extends Schema.Top> = RpcError | ClientCallError | F["Type"]

/**
 * How a tool defined by JSON Schema documents is described.
 *
 * @since 0.1.0
 * @category models
 */
export interface JsonSchemaToolOptions {
  /** What the tool does, for the model. Default: none. */
  readonly description?: string | undefined
  /** A name for people. Default: none. */
  readonly title?: string | undefined
  /**
   * The arguments' JSON Schema, listed exactly as given (any dialect and
   * keyword: `$schema`, `$defs`, `$anchor`, `if`/`then`/`else`…). Its root
   * must be `type: "object"`. It is not checked against the arguments.
   */
  readonly inputSchema: JsonSchema.JsonSchemaObject
  /**
   * The JSON Schema of the result's `structuredContent`, listed exactly as
   * given; its root must be `type: "object"`. The handler's results are
   * not checked against it. Default: none.
   */
  readonly outputSchema?: JsonSchema.JsonSchemaObject | undefined
  /** Behaviour hints. Default: none. */
  readonly annotations?: ToolAnnotations | undefined
  /** Sent as the tool's `_meta`. Default: none. */
  readonly _meta?: { readonly [key: string]: unknown } | undefined
}
