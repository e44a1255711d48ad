/**
 * A thousand stateless-era `tools/call`s at once over real loopback HTTP,
 * a seeded share cut by their client at random points: the invariants of
 * bench/profile/stateless-disconnects.ts (which runs 10 000 and measures
 * memory), without its timings.
 */
import * as http from "node:http"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../../src/server/McpServer.ts"
import { type Handlers, loadOptions, makeLoadServer, runLoad } from "../../fixtures/stateless-load.ts"
import { eventually, isClean, run } from "./helpers.ts"

const COUNT = 1_000

describe("stateless era under load with disconnects", () => {
  it.live(`${COUNT} concurrent calls, a third cut at random points: every kept call answered, no handler left, nothing held`, () =>
    Effect.scoped(Effect.gen(function*() {
      const handlers: Handlers = { active: 0, started: 0 }
      const handle = yield* McpServer.toHandler(makeLoadServer(handlers))
      const context = yield* Layer.build(HttpServerTransport.layer(handle.handler, { port: 0, ...loadOptions(COUNT) }))
      const transport = Context.get(context, HttpServerTransport.HttpServerTransport)
      const url = Option.getOrThrow(transport.url)
      const agent = new http.Agent({ keepAlive: true, maxSockets: COUNT })
      yield* Effect.addFinalizer(() => Effect.sync(() => agent.destroy()))

      const outcome = yield* Effect.promise(() => runLoad({ url, count: COUNT, seed: 26, cutShare: 1 / 3, maxWorkMs: 20, agent }))
      expect(outcome.failures).toEqual([])
      expect(outcome.answered + outcome.cut).toBe(COUNT)
      expect(outcome.cut).toBeGreaterThan(0)
      expect(handlers.started).toBeGreaterThanOrEqual(outcome.answered)

      const settled = () =>
        eventually(async () => {
          const s = await run(transport.stats)
          return handlers.active === 0 && s.statelessRequests === 0 && s.bufferedBytes === 0 && (await isClean(transport))
        }, 10_000)
      expect(yield* Effect.promise(settled)).toBe(true)
      expect(yield* handle.sessions).toEqual([])
      expect(yield* transport.sessionIds).toEqual([])
    })), 120_000)
})
