/**
 * What runs when `tools/call` names a tool: arguments decoded (or checked to
 * be an object, for a tool of hand-written JSON Schema), the handler run
 * inline or as a task as the tool and the session allow, and its result or
 * declared failure encoded into a `CallToolResult`.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import * as JsonRpc from "../../JsonRpc.ts"
import { RpcError } from "../../McpError.ts"
import * as JsonSchema from "../JsonSchema.ts"
import type { RequestContext } from "../McpServer.ts"
import type * as Task from "../Task.ts"
import * as CompiledDecode from "../../internal/CompiledDecode.ts"
import { isRecord } from "../../internal/Records.ts"
import * as TaskMethods2025 from "./TaskMethods2025.ts"
import * as TaskRunner from "./TaskRunner.ts"
import type { ToolResult } from "./ToolShape.ts"

/** A tool's `call`, as the catalogue keeps it. */
export type Call<R> = (args: unknown, context: RequestContext) => Effect.Effect<Record<string, unknown>, unknown, R>

/** What of a tool's options its call reads (`ToolOptions` has them). */
export interface CallOptions {
  readonly success?: Schema.Top | undefined
  readonly text?: ((value: never) => string) | undefined
  readonly failure?: Schema.Top | undefined
  readonly taskSupport?: Task.TaskSupport | undefined
  readonly taskStart?: "call" | "escalate" | undefined
}

const asText = (encoded: unknown): string => (typeof encoded === "string" ? encoded : JSON.stringify(encoded))

const errorResult = (text: string) => ({ isError: true, content: [{ type: "text", text }] })

const badResult = (name: string) =>
  new RpcError({
    code: JsonRpc.ErrorCode.InternalError,
    rpcMessage: `Internal error: the result of tool ${JSON.stringify(name)} does not match its success schema`
  })

/**
 * The call of a tool defined by Schemas (`Tool.add`). `wrap`: the result's
 * JSON form is not an object, so `structuredContent` is `{ result }`.
 */
export const fromSchemas = (
  name: string,
  options: CallOptions,
  parameters: Schema.Top,
  wrap: boolean,
  jsonOptions: JsonSchema.JsonSchemaOptions,
  handler: (params: never, context: RequestContext) => Effect.Effect<unknown, unknown, any>
): Call<any> => {
  const decodeArguments = CompiledDecode.decodeUnknownEffect(JsonSchema.codec(parameters, jsonOptions))
  const encodeSuccess = options.success === undefined
    ? undefined
    : Schema.encodeUnknownEffect(JsonSchema.codec(options.success, jsonOptions))
  const isFailure = options.failure === undefined ? undefined : Schema.is(options.failure)
  const encodeFailure = options.failure === undefined
    ? undefined
    : Schema.encodeUnknownEffect(JsonSchema.codec(options.failure, jsonOptions))

  // Schema parsers without async steps answer with an Exit: the eager combinators then skip the fiber's
  // continuations, which is most of a call's cost for a small tool.
  const toStructured = (encoded: unknown, value: unknown) => ({
    content: [{ type: "text", text: options.text === undefined ? asText(encoded) : options.text(value as never) }],
    structuredContent: wrap || !isRecord(encoded) ? { result: encoded } : encoded
  })
  const invalidResult = () => badResult(name)
  const toResult = (value: unknown): Effect.Effect<Record<string, unknown>, RpcError, any> => {
    if (encodeSuccess === undefined) {
      return Effect.succeed(typeof value === "string" ? { content: [{ type: "text", text: value }] } : value as Record<string, unknown>)
    }
    return Effect.mapBothEager(encodeSuccess(value), {
      onFailure: invalidResult,
      onSuccess: (encoded) => toStructured(encoded, value)
    })
  }

  const catchFailure = isFailure === undefined || encodeFailure === undefined
    ? undefined
    : Effect.catchIf(isFailure, (failure) =>
      encodeFailure(failure).pipe(
        Effect.mapError(invalidResult),
        Effect.map((encoded) => errorResult(asText(encoded)))
      ))

  const finish = (effect: Effect.Effect<unknown, unknown, any>): Effect.Effect<Record<string, unknown>, unknown, any> => {
    const result = Effect.flatMapEager(effect, toResult)
    return catchFailure === undefined ? result : catchFailure(result)
  }
  const taskSupport = options.taskSupport ?? "forbidden"
  const escalates = taskSupport !== "forbidden" && options.taskStart === "escalate"
  // Called inside the router's `Effect.suspend` (or a continuation): a handler that throws is a defect either way.
  const runInline = (params: unknown, context: RequestContext): Effect.Effect<Record<string, unknown>, unknown, any> =>
    escalates
      ? TaskRunner.catchEscalation(Effect.provideService(finish(handler(params as never, context)), TaskRunner.CurrentFinish, finish))
      : finish(handler(params as never, context))
  const runExtension = taskSupport === "forbidden"
    ? runInline
    : escalates
    ? (params: unknown, context: RequestContext) =>
      Effect.flatMap(TaskRunner.CurrentRunner, (runner: TaskRunner.Runner | undefined) =>
        taskSupport === "required" && (runner === undefined || !TaskRunner.declaresTasks(context))
          ? Effect.fail(TaskRunner.missingExtension())
          : runInline(params, context))
    : (params: unknown, context: RequestContext) =>
      TaskRunner.offer(taskSupport, (c) => runInline(params, c), context)
  // A session of the 2025-11-25 tasks asks for a task with `params.task` (the server provides what it asked).
  const run = (params: unknown, context: RequestContext): Effect.Effect<Record<string, unknown>, unknown, any> =>
    Effect.withFiber((fiber) => {
      const augmentation = fiber.getRef(TaskMethods2025.CurrentAugmentation)
      const runner = fiber.getRef(TaskRunner.CurrentRunner)
      return augmentation === undefined || runner === undefined
        ? runExtension(params, context)
        : TaskMethods2025.offer(
          runner,
          taskSupport,
          augmentation,
          (c) => runInline(params, c),
          runExtension(params, context),
          context
        )
    })

  return (args, context) => {
    const decoded = decodeArguments(args)
    if (Exit.isExit(decoded) && Exit.isSuccess(decoded)) return run(decoded.value, context)
    return Effect.matchEffect(decoded, {
      onFailure: (error) => Effect.succeed(errorResult(`Invalid arguments for tool ${JSON.stringify(name)}: ${error.message}`)),
      onSuccess: (params) => run(params, context)
    })
  }
}

/**
 * The call of a tool described by hand-written JSON Schema
 * (`Tool.addJsonSchema`): arguments that are not an object are answered
 * with a tool error; a string result is one text block.
 */
export const fromJsonSchema = <E, R>(
  name: string,
  handler: (args: { readonly [key: string]: unknown }, context: RequestContext) => Effect.Effect<ToolResult, E, R>
): Call<R> =>
(args, context) => {
  if (!isRecord(args)) {
    return Effect.succeed(errorResult(`Invalid arguments for tool ${JSON.stringify(name)}: expected an object`))
  }
  return Effect.map(handler(args, context), (result) =>
    typeof result === "string" ? { content: [{ type: "text", text: result }] } : result as Record<string, unknown>)
}
