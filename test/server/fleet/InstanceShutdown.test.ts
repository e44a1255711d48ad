/**
 * One instance of a fleet (a child process on a real Redis) stopped with
 * SIGTERM while a call runs on it: it drains. Its health endpoint says
 * `draining` (503), a new request to it gets 503 with `Retry-After` while
 * the other instance serves it, the call in flight finishes and is
 * answered, and then the process exits.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as RequestMeta from "../../../src/RequestMeta.ts"
import * as Fleet from "../../fixtures/Fleet.ts"
import * as RedisServer from "../../fixtures/RedisServer.ts"

const KEY = "k".repeat(32)
const MODERN = "2026-07-28"

interface Answer {
  readonly status: number
  readonly retryAfter: string | null
  readonly body: string
}

const answer = (send: () => Promise<Response>): Effect.Effect<Answer> =>
  Effect.promise(async () => {
    const r = await send()
    return { status: r.status, retryAfter: r.headers.get("retry-after"), body: await r.text() }
  })

const call = (fetch: typeof globalThis.fetch, url: string, name: string, args: Record<string, unknown> = {}) => () => {
  const params = {
    name,
    arguments: args,
    _meta: RequestMeta.requestMeta({ protocolVersion: MODERN, clientCapabilities: {} })
  }
  return fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json",
      ...RequestMeta.standardHeaders(MODERN, "tools/call", params)
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params })
  })
}

/** Asks again (every 50 ms) until `check` holds; the test's own timeout bounds it. */
const until = <A>(probe: Effect.Effect<A>, check: (a: A) => boolean): Effect.Effect<A> =>
  Effect.flatMap(probe, (a) => check(a) ? Effect.succeed(a) : Effect.andThen(Effect.sleep("50 millis"), until(probe, check)))

const textOf = (a: Answer) => JSON.parse(a.body).result.content[0].text as string

describe.skipIf(!RedisServer.present)("an instance of a fleet stopped with SIGTERM", () => {
  it.live("drains: health says draining, a new request gets 503 + Retry-After and the other instance serves it, the call in flight is answered, then it exits", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const fleet = yield* Fleet.start({ redisUrl: redis.url, names: ["A", "B"], args: ["--keys", KEY] })
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => mkdtempSync(join(tmpdir(), "mcp-hold-"))),
        (d) => Effect.sync(() => rmSync(d, { recursive: true, force: true }))
      )
      const a = fleet.instance("A")
      const health = answer(() => fetch(`${a.url}/health`))
      expect(JSON.parse((yield* health).body)).toEqual({ status: "ok", store: { kind: "redis", connected: true } })
      const exited = new Promise<void>((resolve) => a.child.once("exit", () => resolve()))

      const inFlight = Effect.runPromise(answer(call(fetch, a.url, "gate", { dir })))
      yield* until(Effect.sync(() => existsSync(join(dir, "started"))), (started) => started)
      yield* fleet.signal("A", "SIGTERM")

      const draining = yield* until(health, (h) => h.status === 503)
      expect(JSON.parse(draining.body)).toEqual({ status: "draining", store: { kind: "redis", connected: true } })
      const refused = yield* answer(call(fetch, a.url, "whoami"))
      expect(refused.status).toBe(503)
      expect(refused.retryAfter).toBe("1")
      expect(JSON.parse(refused.body).error.message).toBe("Service unavailable: this server is shutting down")
      // Where a load balancer sends it next.
      expect(textOf(yield* answer(call(fleet.only("B"), fleet.url, "whoami")))).toBe("B")

      writeFileSync(join(dir, "release"), "")
      const finished = yield* Effect.promise(() => inFlight)
      expect(finished.status).toBe(200)
      expect(textOf(finished)).toBe("released on A")
      yield* Effect.promise(() => exited)
      expect(a.child.exitCode !== null || a.child.signalCode !== null).toBe(true)
    }).pipe(Effect.scoped), 120_000)
})
