/**
 * The official SDK v2 server (`@modelcontextprotocol/server` 2.4) for the
 * tasks workload: `createMcpHandler(factory, { legacy: "reject" })` on
 * node:http (the peers' fetch adapter), the same tools as server-ours.ts.
 * SDK 2.4 routes the extension's methods to handlers registered with a
 * schema, and a tool may hand back a `CreateTaskResult`, but it keeps no
 * tasks and runs none: the task store here is a `Map` in this process and a
 * task's work a promise, the least a server on the SDK has to add (no TTL,
 * no owner check, no `input_required`).
 *
 *   node --expose-gc bench/tasks/server-sdk2.ts
 */
import { createMcpHandler, fromJsonSchema, McpServer, ProtocolError, type ServerContext, type StandardSchemaV1 } from "@modelcontextprotocol/server"
import { randomUUID } from "node:crypto"
import { serveFetch } from "../../test/fixtures/peers/http-adapter.ts"
import { announce, HELD_TEXT, hold, installControl } from "../stateless-server/control.ts"
import { POLL_MS, TASKS_EXTENSION, workText } from "./protocol.ts"

installControl()

type Status = "working" | "completed" | "failed" | "cancelled"

interface TaskState {
  readonly taskId: string
  status: Status
  readonly createdAt: string
  lastUpdatedAt: string
  result?: Record<string, unknown>
}

const TTL_MS = 600_000
const tasks = new Map<string, TaskState>()
const text = (value: string) => ({ content: [{ type: "text" as const, text: value }] })

const detailed = (task: TaskState) => ({
  taskId: task.taskId,
  status: task.status,
  createdAt: task.createdAt,
  lastUpdatedAt: task.lastUpdatedAt,
  ttlMs: TTL_MS,
  pollIntervalMs: POLL_MS,
  ...(task.status === "completed" ? { result: { resultType: "complete", ...task.result } } : {})
})

const declared = (ctx: ServerContext): boolean => {
  const envelope = (ctx.mcpReq as { envelope?: Record<string, unknown> }).envelope ?? {}
  const capabilities = envelope["io.modelcontextprotocol/clientCapabilities"] as { extensions?: Record<string, unknown> } | undefined
  return capabilities?.extensions?.[TASKS_EXTENSION] !== undefined
}

/** Runs `work` as a task when the client declared the extension (answering the `CreateTaskResult`), else inline. */
const maybeTask = async (ctx: ServerContext, work: () => Promise<ReturnType<typeof text>>) => {
  if (!declared(ctx)) return work()
  const now = new Date().toISOString()
  const task: TaskState = { taskId: randomUUID(), status: "working", createdAt: now, lastUpdatedAt: now }
  tasks.set(task.taskId, task)
  work().then((result) => {
    if (task.status !== "working") return
    task.status = "completed"
    task.result = result
    task.lastUpdatedAt = new Date().toISOString()
  })
  return { resultType: "task", ...detailed(task) } as never
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
const workSchema = fromJsonSchema<{ ms: number }>({ type: "object", properties: { ms: { type: "number" } }, required: ["ms"] })
const heldSchema = fromJsonSchema({ type: "object", properties: {} })

type TaskParams = { taskId: string }
const taskIdParams: StandardSchemaV1<TaskParams> = {
  "~standard": {
    version: 1 as const,
    vendor: "bench",
    validate: (value: unknown) =>
      typeof value === "object" && value !== null && typeof (value as { taskId?: unknown }).taskId === "string"
        ? { value: value as TaskParams }
        : { issues: [{ message: "taskId is required" }] }
  }
}
const known = (taskId: string) => {
  const task = tasks.get(taskId)
  if (task === undefined) throw new ProtocolError(-32602, "Failed to retrieve task: Task not found")
  return task
}

const factory = () => {
  const server = new McpServer(
    { name: "bench-sdk2", version: "2.4.0" },
    { capabilities: { tools: {}, extensions: { [TASKS_EXTENSION]: {} } } as never }
  )
  server.registerTool("work", { inputSchema: workSchema }, ({ ms }, ctx) =>
    maybeTask(ctx, async () => {
      if (ms > 0) await sleep(ms)
      return text(workText(ms))
    }))
  server.registerTool("held", { inputSchema: heldSchema }, (_args: unknown, ctx: ServerContext) =>
    maybeTask(ctx, async () => {
      await hold()
      return text(HELD_TEXT)
    }))
  server.server.setRequestHandler("tasks/get", { params: taskIdParams }, (params) =>
    ({ resultType: "complete", ...detailed(known(params.taskId)) }) as never)
  server.server.setRequestHandler("tasks/cancel", { params: taskIdParams }, (params) => {
    const task = known(params.taskId)
    if (task.status === "working") {
      task.status = "cancelled"
      task.lastUpdatedAt = new Date().toISOString()
    }
    return { resultType: "complete" } as never
  })
  return server
}

const handler = createMcpHandler(factory, { legacy: "reject" })
const port = await serveFetch(handler.fetch)
announce(`http://127.0.0.1:${port}/mcp`)
