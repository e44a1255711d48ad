/**
 * The fleet harness itself: three instances on one Redis, reached through
 * one URL; a round-robin client's calls are spread over all three, an
 * adversarial fetch never sends a session's request where its last went,
 * and a killed instance is started again under its name.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as McpClient from "../../../src/client/McpClient.ts"
import * as StreamableHttpClientTransport from "../../../src/client/StreamableHttpClientTransport.ts"
import * as Fleet from "../../fixtures/Fleet.ts"
import * as RedisServer from "../../fixtures/RedisServer.ts"

const KEY = "k".repeat(32)

const whoami = (client: McpClient.McpClientShape) =>
  Effect.map(client.callTool({ name: "whoami" }), (r) => (r.content[0] as { text: string }).text)

describe.skipIf(!RedisServer.present && process.env.CI !== "true")("Fleet harness", () => {
  it.live("spreads a stateless client's calls over every instance and restarts a killed one", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const fleet = yield* Fleet.start({ redisUrl: redis.url, args: ["--keys", KEY] })
      const client = Context.get(
        yield* Layer.build(McpClient.layer({ protocol: "2026-07-28" }).pipe(
          Layer.provide(StreamableHttpClientTransport.layer({ url: fleet.url })),
          Layer.provide(Fleet.httpClient(fleet.roundRobin))
        )),
        McpClient.McpClient
      )
      const seen = new Set<string>()
      for (let i = 0; i < 6; i++) seen.add(yield* whoami(client))
      expect([...seen].sort()).toEqual(["A", "B", "C"])

      yield* fleet.signal("B", "SIGKILL")
      const fresh = yield* fleet.restart("B")
      expect(fresh.name).toBe("B")
      const after = new Set<string>()
      for (let i = 0; i < 6; i++) after.add(yield* whoami(client))
      expect([...after].sort()).toEqual(["A", "B", "C"])
    }).pipe(Effect.scoped), { timeout: 60_000 })
})
