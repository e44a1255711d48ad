import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schedule, Stream, SubscriptionRef } from "effect"
import * as McpManager from "../../../src/client/McpManager.ts"
import * as StdioClientTransport from "../../../src/client/StdioClientTransport.ts"
import type { SpawnError } from "../../../src/McpError.ts"
import type { ChildProcessSpawner } from "effect/process"

const { Config } = McpManager

const modernPath = new URL("../../fixtures/modern-stdio-server.ts", import.meta.url).pathname
const legacyPath = new URL("../../fixtures/router-stdio-server.ts", import.meta.url).pathname

const stdioFactory: McpManager.TransportFactory<SpawnError, ChildProcessSpawner.ChildProcessSpawner> = (_, config) =>
  Config.isStdio(config)
    ? StdioClientTransport.make({
      command: config.command,
      args: config.args,
      shutdown: { gracePeriod: "200 millis", killAfter: "200 millis" },
      stderr: { log: false }
    })
    : Effect.die("stdio only in these tests")

const readyOf = (manager: McpManager.McpManagerShape, name: string) =>
  manager.status(name).pipe(
    Stream.filter((s) => s._tag === "Ready"),
    Stream.runHead,
    Effect.map((o) => (o._tag === "Some" ? o.value : undefined))
  )

describe("McpManager with servers of both eras", () => {
  it.live("each server speaks its own era; a restarted stateless server is listened to again", () =>
    Effect.gen(function*() {
      const manager = yield* McpManager.make({
        config: {
          mcpServers: {
            modern: { command: process.execPath, args: [modernPath] },
            legacy: { command: process.execPath, args: [legacyPath, "--name", "legacy", "--handshake-only"] },
            pinned: { command: process.execPath, args: [legacyPath, "--name", "pinned"], protocol: "2025-11-25" }
          }
        },
        transport: stdioFactory,
        slowStartThreshold: "25 seconds",
        reconnectSchedule: Schedule.spaced("100 millis")
      })
      const modern = yield* readyOf(manager, "modern")
      const legacy = yield* readyOf(manager, "legacy")
      const pinned = yield* readyOf(manager, "pinned")
      expect(modern).toMatchObject({ era: "modern", protocolVersion: "2026-07-28", generation: 1 })
      expect(legacy).toMatchObject({ era: "legacy", protocolVersion: "2025-11-25" })
      expect(pinned).toMatchObject({ era: "legacy" })
      // Tools of both eras are routed alike.
      const tools = (yield* manager.tools).map((t) => t.name)
      expect(tools).toContain("modern__fault")

      const first = yield* manager.client("modern")
      expect((yield* SubscriptionRef.get(first.subscription))._tag).toBe("Listening")
      // The server dies on this call; the manager starts a new process, which is listened to again.
      yield* manager.callTool("modern__fault", { fault: { _tag: "Die" } }).pipe(Effect.ignore)
      const healed = yield* manager.status("modern").pipe(
        Stream.filter((s) => s._tag === "Ready" && s.generation === 2),
        Stream.runHead
      )
      expect(healed._tag).toBe("Some")
      const second = yield* manager.client("modern")
      expect(second).not.toBe(first)
      const state = yield* SubscriptionRef.get(second.subscription)
      expect(state._tag).toBe("Listening")
      const result = yield* manager.callTool("modern__fault", { fault: { _tag: "Complete" }, tag: 1 })
      expect(result.content[0]).toMatchObject({ text: "done 1" })
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})
