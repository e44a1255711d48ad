/**
 * Tasks over stdio with a real child process (stateless era): a task
 * survives the request that created it, asks the client through
 * `inputRequests` and is answered with `tasks/update`, and `tasks/cancel`
 * interrupts its handler in the child.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as StdioClientTransport from "../../../src/client/StdioClientTransport.ts"
import * as RequestMeta from "../../../src/RequestMeta.ts"
import { awaitEvent } from "../../cli/runCli.ts"
import { ACK, ackOf, TASKS } from "./harness.ts"

const fixture = fileURLToPath(new URL("../../fixtures/tasks-stdio-server.ts", import.meta.url))
const dir = mkdtempSync(join(tmpdir(), "tasks-stdio-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const meta = { _meta: RequestMeta.requestMeta({ protocolVersion: "2026-07-28", clientCapabilities: TASKS }) }

describe("tasks over stdio", () => {
  it.live("create, input_required answered by tasks/update, completion; cancel interrupts the child's handler", () =>
    Effect.gen(function*() {
      const events = join(dir, "events.jsonl")
      const transport = yield* StdioClientTransport.make({ command: process.execPath, args: [fixture, `--events=${events}`] })
      const request = (method: string, params: Record<string, unknown>) =>
        Effect.map(transport.request(method, { ...params, ...meta }), (r) => r as Record<string, any>)
      const poll = (taskId: string, statuses: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          for (;;) {
            const task = yield* request("tasks/get", { taskId })
            if (statuses.includes(task.status)) return task
          }
        })

      const greet = yield* request("tools/call", { name: "greet", arguments: {} })
      expect(greet).toMatchObject({ resultType: "task", status: "working" })
      const asking = yield* poll(greet.taskId, ["input_required"])
      const [key] = Object.keys(asking.inputRequests)
      expect(asking.inputRequests[key!].method).toBe("elicitation/create")
      expect(ackOf(yield* request("tasks/update", { taskId: greet.taskId, inputResponses: { [key!]: { action: "accept", content: { name: "Io" } } } }))).toEqual(ACK)
      const done = yield* poll(greet.taskId, ["completed", "failed"])
      expect(done.result.content).toEqual([{ type: "text", text: "Hello, Io!" }])

      const block = yield* request("tools/call", { name: "block", arguments: {} })
      yield* awaitEvent(events, (e) => e.event === "started")
      expect(ackOf(yield* request("tasks/cancel", { taskId: block.taskId }))).toEqual(ACK)
      yield* awaitEvent(events, (e) => e.event === "interrupted")
      expect((yield* request("tasks/get", { taskId: block.taskId })).status).toBe("cancelled")
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)), 30_000)
})
