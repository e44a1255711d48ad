/**
 * The client's Schemas (`effect/Schema`, `effect/ai/McpSchema`) start
 * loading as soon as the first request of a connection is on its way, so
 * that the import runs while the server starts and answers. In `auto` that
 * request is the era probe: the load must not wait for its answer.
 *
 * One test per file on purpose: the import is started once per process (per
 * test file here), and the assertion is about the first connection.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as LazySchemas from "../../src/client/internal/LazySchemas.ts"
import type { Handler } from "../../src/server/Handler.ts"
import { makeModern } from "../fixtures/modern-handler.ts"

describe("McpClient's Schemas at connect", () => {
  it.effect("auto: the import is under way while the probe waits for its answer", () =>
    Effect.gen(function*() {
      expect(LazySchemas.started()).toBe(false)
      const script = makeModern()
      let startedWhileProbing: boolean | undefined
      const handler: Handler = (message, ctx) => {
        if ("method" in message && message.method === "server/discover") {
          // The answer is held until the next macrotask, after the client went on from sending the probe.
          return Effect.flatMap(
            Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve))),
            () => {
              startedWhileProbing = LazySchemas.started()
              return script.handler(message, ctx)
            }
          )
        }
        return script.handler(message, ctx)
      }
      const pair = yield* InMemoryTransport.makePair(handler)
      const client = yield* McpClient.fromTransport(pair.client, { protocol: "auto" })
      expect(client.era).toBe("modern")
      expect(script.seen[0]!.method).toBe("server/discover")
      expect(startedWhileProbing).toBe(true)
    }))
})
