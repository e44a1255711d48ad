/**
 * What the bridge's HTTP front lets in before it starts an upstream process:
 * at most `maxUpstreams` upstream connections (a session past it gets 503
 * with `Retry-After` and starts nothing; a session that ends makes room),
 * and with `authorization`, nothing at all for a request without a valid
 * bearer token. The upstreams are real child processes, counted by the
 * pids the bridge spawned and by its own count.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { InvalidToken } from "../../src/server/auth/TokenVerifier.ts"
import { isAlive } from "../fixtures/stdio-helpers.ts"
import { initializeBody, post } from "../server/http/helpers.ts"
import { bridgeOverHttp, eventually, routerServer } from "./helpers.ts"

const initialize = (url: string, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const res = await post(url, initializeBody(1), headers)
    return { status: res.status, headers: res.headers, body: await res.text() }
  })

describe("bridge over HTTP: admission", { timeout: 60_000 }, () => {
  it.live("at maxUpstreams a new session gets 503 with Retry-After and starts no process; a DELETE makes room", () =>
    Effect.gen(function*() {
      const { bridge, pids, url } = yield* bridgeOverHttp(routerServer, [], {}, { maxUpstreams: 2 })
      const first = yield* initialize(url)
      const second = yield* initialize(url)
      expect([first.status, second.status]).toEqual([200, 200])
      expect(pids.length).toBe(2)
      expect(yield* bridge.upstreams).toBe(2)

      const third = yield* initialize(url)
      expect(third.status).toBe(503)
      expect(Number(third.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
      expect(JSON.parse(third.body)).toMatchObject({ error: { message: expect.stringMatching(/limit of 2 upstream/) } })
      expect(third.headers.get("mcp-session-id")).toBe(null)
      // Nothing was started for it.
      expect(pids.length).toBe(2)
      expect(yield* bridge.upstreams).toBe(2)
      expect(pids.every(isAlive)).toBe(true)

      // The first session ends: its process goes, and a new session is served by a new one.
      const ended = yield* Effect.promise(() =>
        fetch(url, { method: "DELETE", headers: { "mcp-session-id": first.headers.get("mcp-session-id")! } })
      )
      expect(ended.status).toBe(204)
      expect(yield* eventually(bridge.upstreams, (n) => n === 1)).toBe(1)
      expect(yield* eventually(Effect.sync(() => isAlive(pids[0]!)), (alive) => !alive)).toBe(false)
      const fourth = yield* initialize(url)
      expect(fourth.status).toBe(200)
      expect(pids.length).toBe(3)
      expect(yield* bridge.upstreams).toBe(2)
      expect(pids.slice(1).every(isAlive)).toBe(true)
    }).pipe(Effect.scoped))

  it.live("with authorization, an initialize without a valid bearer token gets 401 and starts no process", () =>
    Effect.gen(function*() {
      const { bridge, pids, url } = yield* bridgeOverHttp(routerServer, [], {
        authorization: {
          authorizationServers: ["https://auth.example.com"],
          verifier: {
            verify: (token) =>
              token === "good"
                ? Effect.succeed({
                  subject: "alice",
                  scopes: [],
                  clientId: undefined,
                  issuer: "https://auth.example.com",
                  expiresAt: undefined,
                  claims: {}
                })
                : Effect.fail(new InvalidToken({ reason: "unknown token" }))
          }
        }
      })
      const anonymous = yield* initialize(url)
      expect(anonymous.status).toBe(401)
      expect(anonymous.headers.get("www-authenticate")).toMatch(/^Bearer resource_metadata=/)
      const forged = yield* initialize(url, { authorization: "Bearer forged" })
      expect(forged.status).toBe(401)
      expect(pids.length).toBe(0)
      expect(yield* bridge.upstreams).toBe(0)

      const signed = yield* initialize(url, { authorization: "Bearer good" })
      expect(signed.status).toBe(200)
      expect(pids.length).toBe(1)
    }).pipe(Effect.scoped))
})
