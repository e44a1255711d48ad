/**
 * What the server says of its tasks on the wire: a task as `tasks/get` and
 * `notifications/tasks` show it, its `CreateTaskResult`, the error of a
 * failed task, the -32021 for a client that did not declare the extension,
 * and the extension in the server's capabilities and in a `tools/list` of
 * the stateless era.
 */
import * as Cause from "effect/Cause"
import * as JsonRpc from "../../JsonRpc.ts"
import { CapabilityNotSupported, RpcError } from "../../McpError.ts"
import * as TaskWire from "../../TaskWire.ts"
import type { TaskRecord } from "../TaskStore.ts"
import { isRecord } from "../../internal/Records.ts"

type Json = Record<string, unknown>

const iso = (ms: number) => new Date(ms).toISOString()

/** The task as `tasks/get` answers and `notifications/tasks` sends it (without `resultType`). */
export const detailed = (r: TaskRecord): Json => {
  const out: Json = {
    taskId: r.taskId,
    status: r.status,
    ...(r.statusMessage === undefined ? {} : { statusMessage: r.statusMessage }),
    createdAt: iso(r.createdAt),
    lastUpdatedAt: iso(r.lastUpdatedAt),
    ttlMs: r.ttlMs,
    ...(r.pollIntervalMs === undefined ? {} : { pollIntervalMs: r.pollIntervalMs })
  }
  if (r.status === "input_required") out.inputRequests = r.inputRequests
  // The tool's own result as the call would have answered it: a 2026-07-28 result names its resultType,
  // and the official requester refuses a completed task whose result does not.
  else if (r.status === "completed") out.result = { resultType: "complete", ...r.result }
  else if (r.status === "failed") out.error = r.error ?? { code: JsonRpc.ErrorCode.InternalError, message: "Internal error" }
  return out
}

/** The `CreateTaskResult` of a task just made. */
export const created = (r: TaskRecord): Json => {
  const { inputRequests: _i, result: _r, error: _e, ...task } = detailed(r)
  return { resultType: "task", ...task }
}

/** The `-32021` for a client that did not declare the extension. */
export const missingExtension = () =>
  new RpcError({
    code: JsonRpc.ErrorCode.MissingRequiredClientCapability,
    rpcMessage: `Missing required client capability: extensions.${TaskWire.EXTENSION_ID}`,
    data: TaskWire.missingCapabilityData
  })

/** The JSON-RPC error a failed task reports. */
export const errorOf = (cause: Cause.Cause<unknown>): { code: number; message: string; data?: unknown } => {
  const reason = Cause.squash(cause)
  if (reason instanceof RpcError) {
    return reason.data === undefined
      ? { code: reason.code, message: reason.rpcMessage }
      : { code: reason.code, message: reason.rpcMessage, data: reason.data }
  }
  if (reason instanceof CapabilityNotSupported && reason.peer === "client") {
    return {
      code: JsonRpc.ErrorCode.MissingRequiredClientCapability,
      message: `Missing required client capability: ${reason.capability}`
    }
  }
  return { code: JsonRpc.ErrorCode.InternalError, message: "Internal error" }
}

/** The capabilities with the extension declared under `extensions`. */
export const withExtension = (declared: Record<string, unknown>): Record<string, unknown> => ({
  ...declared,
  extensions: { ...(isRecord(declared.extensions) ? declared.extensions : {}), [TaskWire.EXTENSION_ID]: {} }
})

/** A `tools/list` result of the stateless era: its `Tool` has no `execution` (the extension replaces it). */
export const withoutExecution = (result: unknown): Record<string, unknown> => {
  if (!isRecord(result) || !Array.isArray(result.tools)) return isRecord(result) ? result : {}
  return {
    ...result,
    tools: result.tools.map((tool) => {
      if (!isRecord(tool) || !("execution" in tool)) return tool
      const { execution: _execution, ...rest } = tool
      return rest
    })
  }
}
