/**
 * McpManager and the effect/ai Toolkit bridge (AiToolkit) follow a task the
 * server makes of a tool call: both go through `McpClient.callTool`. The
 * server is the official SDK v2 server running tools as tasks
 * (test/fixtures/peers/sdk2-task-server.ts), a real child process over stdio.
 */
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, Schedule, Stream } from "effect"
import * as AiToolkit from "../../../src/client/AiToolkit.ts"
import * as McpClient from "../../../src/client/McpClient.ts"
import * as McpManager from "../../../src/client/McpManager.ts"
import * as StdioClientTransport from "../../../src/client/StdioClientTransport.ts"
import { peerPath } from "../../fixtures/peers/launch.ts"

const entry = {
  command: process.execPath,
  args: [peerPath("sdk2-task-server.ts"), "--stdio"]
}

describe("tasks through McpManager and AiToolkit", { timeout: 60_000 }, () => {
  it.live("McpManager.callTool follows a task to its result, answering its question", () =>
    Effect.gen(function*() {
      const manager = yield* McpManager.make({
        config: { mcpServers: { jobs: entry } },
        reconnectSchedule: Schedule.spaced("1 hour"),
        slowStartThreshold: "25 seconds",
        client: {
          handlers: { elicit: () => Effect.succeed({ action: "accept" as const, content: { name: "Grace" } }) }
        }
      })
      const report = yield* manager.callTool("jobs__report", { polls: 2, pollMs: 20 })
      expect(report.content).toEqual([{ type: "text", text: "report ready" }])
      const hello = yield* manager.callTool("jobs__ask")
      expect(hello.content).toEqual([{ type: "text", text: "Hello, Grace!" }])
    }).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici))))

  it.live("a Toolkit tool of a client follows a task; a failed task reaches the model as a failure", () =>
    Effect.gen(function*() {
      const client = yield* McpClient.connect(
        StdioClientTransport.make({ ...entry, stderr: { log: false } }),
        { protocol: "2026-07-28" }
      )
      const toolkit = yield* AiToolkit.make(client)
      const handled = yield* toolkit.handle("report" as never, { polls: 2, pollMs: 20 } as never).pipe(
        Effect.flatMap(Stream.runLast),
        Effect.map(Option.getOrThrow)
      )
      expect(handled.isFailure).toBe(false)
      expect(handled.result).toMatchObject({ content: [{ type: "text", text: "report ready" }] })
      const broken = yield* toolkit.handle("broken" as never, {} as never).pipe(
        Effect.flatMap(Stream.runLast),
        Effect.map(Option.getOrThrow)
      )
      expect(broken.isFailure).toBe(true)
      expect(broken.result).toMatchObject({ _tag: "McpToolFailure", kind: "call-failed", tool: "broken" })
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})
