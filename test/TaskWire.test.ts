/**
 * The tasks extension's wire: every sample our Schemas accept is valid
 * against the extension's official JSON schema, and the ones it rejects are
 * rejected here too; the routing rule and the capability check.
 */
import { existsSync, readFileSync } from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import { Exit, Schema, SchemaRepresentation } from "effect"
import * as RequestMeta from "../src/RequestMeta.ts"
import * as TaskWire from "../src/TaskWire.ts"

const SCHEMA = "/work/shared/mcp-spec/ext-tasks/schema.json"

const official = (definition: string) => {
  const defs = JSON.parse(readFileSync(SCHEMA, "utf8")).$defs
  // Intersections of a union with a struct, which effect's JSON Schema import does not expand.
  for (const name of ["GetTaskResult", "TaskStatusNotificationParams", "TaskStatusNotification"]) delete defs[name]
  const schema = SchemaRepresentation.fromJsonSchemaDocument({
    dialect: "draft-2020-12",
    schema: { $ref: `#/$defs/${definition}` },
    definitions: defs as never
  })
  return (value: unknown) => Exit.isSuccess(Schema.decodeUnknownExit(schema as Schema.Codec<unknown, unknown>)(value))
}

const base = { taskId: "t-1", createdAt: "2026-12-03T10:00:00Z", lastUpdatedAt: "2026-12-03T10:00:01Z", ttlMs: 60000, pollIntervalMs: 500 }

const samples: ReadonlyArray<readonly [definition: string, ours: Schema.Top, value: unknown, valid: boolean]> = [
  ["Task", TaskWire.Task, { ...base, status: "working", statusMessage: "on it" }, true],
  ["Task", TaskWire.Task, { ...base, status: "paused" }, false],
  ["Task", TaskWire.Task, { ...base, ttlMs: null, status: "working" }, true],
  ["WorkingTask", TaskWire.WorkingTask, { ...base, status: "working" }, true],
  ["InputRequiredTask", TaskWire.InputRequiredTask, {
    ...base,
    status: "input_required",
    inputRequests: { name: { method: "elicitation/create", params: { mode: "form", message: "Name?", requestedSchema: { type: "object", properties: {} } } } }
  }, true],
  ["InputRequiredTask", TaskWire.InputRequiredTask, { ...base, status: "input_required" }, false],
  ["CompletedTask", TaskWire.CompletedTask, { ...base, status: "completed", result: { content: [{ type: "text", text: "done" }], isError: false } }, true],
  ["CompletedTask", TaskWire.CompletedTask, { ...base, status: "completed" }, false],
  ["FailedTask", TaskWire.FailedTask, { ...base, status: "failed", error: { code: -32603, message: "boom" } }, true],
  ["FailedTask", TaskWire.FailedTask, { ...base, status: "failed", error: { message: "boom" } }, false],
  ["CancelledTask", TaskWire.CancelledTask, { ...base, status: "cancelled" }, true],
  ["CreateTaskResult", TaskWire.CreateTaskResult, { ...base, status: "working", resultType: "task" }, true],
  ["CreateTaskResult", TaskWire.CreateTaskResult, { ...base, status: "working", resultType: "complete" }, false],
  ["CancelledTask", TaskWire.GetTaskResult, { ...base, status: "cancelled", resultType: "complete" }, true],
  ["CompletedTask", TaskWire.GetTaskResult, { ...base, status: "completed", resultType: "complete" }, false],
  ["UpdateTaskResult", TaskWire.UpdateTaskResult, { resultType: "complete" }, true],
  ["CancelTaskResult", TaskWire.CancelTaskResult, { resultType: "complete" }, true]
]

describe("TaskWire", () => {
  it.skipIf(!existsSync(SCHEMA))("agrees with the extension's official schema on valid and invalid samples", () => {
    for (const [definition, ours, value, valid] of samples) {
      const verdict = [official(definition)(value), Exit.isSuccess(Schema.decodeUnknownExit(ours as Schema.Codec<unknown, unknown>)(value))]
      expect({ definition, value, verdict }).toEqual({ definition, value, verdict: [valid, valid] })
    }
  })

  it("routes tasks/get, tasks/update and tasks/cancel by params.taskId, and only those", () => {
    for (const method of TaskWire.ROUTED_BY_TASK_ID) {
      expect(TaskWire.routingName(method, { taskId: "abc" })).toBe("abc")
      expect(RequestMeta.standardHeaders("2026-07-28", method, { taskId: "abc" })["mcp-name"]).toBe("abc")
    }
    expect(TaskWire.routingName("tools/call", { name: "x" })).toBeUndefined()
    expect(TaskWire.routingName("tasks/get", { taskId: 7 })).toBeUndefined()
  })

  it("reads a declaration of the extension from a capabilities object", () => {
    expect(TaskWire.declares({ extensions: { [TaskWire.EXTENSION_ID]: {} } })).toBe(true)
    expect(TaskWire.declares({ extensions: {} })).toBe(false)
    expect(TaskWire.declares({ tasks: {} })).toBe(false)
    expect(TaskWire.declares(undefined)).toBe(false)
    expect(TaskWire.missingCapabilityData).toEqual({ requiredCapabilities: { extensions: { [TaskWire.EXTENSION_ID]: {} } } })
  })
})
