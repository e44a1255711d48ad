/**
 * `logging`: one log line per answered request, and how a request ended
 * (`Outcome`). Re-exported by `Middleware`.
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import type * as LogLevel from "effect/LogLevel"
import * as JsonRpc from "../../JsonRpc.ts"
import type { McpRequest, Middleware } from "./MiddlewareShape.ts"

/**
 * Options of `logging`.
 *
 * @since 0.1.0
 * @category models
 */
export interface LoggingOptions {
  /** The level of the line logged per request. Default `"Info"`. */
  readonly level?: LogLevel.Severity | undefined
}

/**
 * Logs one line per request once it is answered (`MCP tools/call echo ok`),
 * annotated with `mcp.method`, `mcp.name`, `mcp.era`, `mcp.session`,
 * `mcp.principal`, `mcp.outcome` and `mcp.durationMs`. An interrupted
 * request (cancelled) is logged as `interrupted`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const logging = (options: LoggingOptions = {}): Middleware => {
  const log = Effect.logWithLevel(options.level ?? "Info")
  return (next) => (request) =>
    Effect.flatMap(Clock.currentTimeMillis, (start) =>
      Effect.onExit(next(request), (exit) =>
        Effect.flatMap(Clock.currentTimeMillis, (end) => {
          const o = outcomeOf(exit)
          const text = o.code === undefined ? o.outcome : `${o.outcome} ${o.code}`
          return log(`MCP ${title(request)} ${text}`).pipe(
            Effect.annotateLogs({
              "mcp.method": request.method,
              ...(request.name === undefined ? {} : { "mcp.name": request.name }),
              "mcp.era": request.era,
              ...(request.sessionId === undefined ? {} : { "mcp.session": request.sessionId }),
              ...(request.principal === undefined ? {} : { "mcp.principal": request.principal }),
              "mcp.outcome": text,
              "mcp.durationMs": end - start
            })
          )
        })))
}

const title = (request: McpRequest) =>
  request.method === "tools/call" || request.method === "prompts/get"
    ? request.name === undefined ? request.method : `${request.method} ${request.name}`
    : request.method

/**
 * How a request ended: `ok`, `input_required` (a stateless request asking
 * the client for more), `error` with the JSON-RPC code (a failure or defect
 * is the -32603 the transport sends), or `interrupted` (the client
 * cancelled; no reply).
 *
 * @since 0.1.0
 * @category models
 */
export interface Outcome {
  readonly outcome: "ok" | "input_required" | "error" | "interrupted"
  readonly code?: number | undefined
}

const outcomeOf = (exit: Exit.Exit<JsonRpc.JsonRpcResponse, unknown>): Outcome => {
  if (exit._tag === "Failure") {
    return Cause.hasInterruptsOnly(exit.cause)
      ? { outcome: "interrupted" }
      : { outcome: "error", code: JsonRpc.ErrorCode.InternalError }
  }
  const response = exit.value
  if ("error" in response) return { outcome: "error", code: response.error.code }
  const result = response.result as { readonly resultType?: unknown } | undefined
  return result?.resultType === "input_required" ? { outcome: "input_required" } : { outcome: "ok" }
}
