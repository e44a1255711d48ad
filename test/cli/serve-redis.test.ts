/**
 * `effect-mcp-transport serve --http --redis URL` run as a user runs it:
 * two instances start on one real Redis and each answers a tool of the
 * example server; it prints where its health is read, which shows the
 * Redis connection's state; the flag's usage errors exit 2 with one line,
 * and an unreachable Redis exits 3.
 *
 * The program is the built binary (dist/cli/main.js; `npm run build` first).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createServer } from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as RequestMeta from "../../src/RequestMeta.ts"
import * as RedisServer from "../fixtures/RedisServer.ts"
import { ensureBuilt, MAIN } from "./runCli.ts"

const bin = process.env.EFFECT_MCP_BIN ?? (ensureBuilt(), MAIN)
const MODERN = "2026-07-28"
const KEYS = `${"n".repeat(32)},${"o".repeat(32)}`

interface Spawned {
  readonly child: ChildProcess
  readonly stderr: () => string
  readonly exited: Promise<number>
}

const run = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.acquireRelease(
    Effect.sync((): Spawned => {
      const child = spawn(process.execPath, [bin, ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] })
      let err = ""
      child.stdout!.resume()
      child.stderr!.setEncoding("utf8").on("data", (d: string) => void (err += d))
      const exited = new Promise<number>((resolve) => child.on("close", (code) => resolve(code ?? 128)))
      return { child, stderr: () => err, exited }
    }),
    (s) => Effect.sync(() => void (s.child.exitCode === null && s.child.signalCode === null && s.child.kill("SIGKILL")))
  )

const listening = (s: Spawned) =>
  Effect.callback<string, Error>((resume) => {
    const check = () => {
      const m = /^listening (http:\/\/127\.0\.0\.1:\d+\/mcp)/m.exec(s.stderr())
      if (m !== null) resume(Effect.succeed(m[1]!))
    }
    s.child.stderr!.on("data", check)
    s.child.once("close", () => resume(Effect.fail(new Error(`exited: ${s.stderr()}`))))
    check()
  })

const call = (url: string, params: Record<string, unknown>) =>
  Effect.promise(async () => {
    const full = { ...params, _meta: RequestMeta.requestMeta({ protocolVersion: MODERN, clientCapabilities: { elicitation: { form: {} } } }) }
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json", ...RequestMeta.standardHeaders(MODERN, "tools/call", full) },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: full })
    })
    return { status: res.status, body: await res.json() as { result?: Record<string, any>; error?: unknown } }
  })

/** Asks again (every 50 ms) until `check` holds; the test's own timeout bounds it. */
const until = <A>(probe: Effect.Effect<A>, check: (a: A) => boolean): Effect.Effect<A> =>
  Effect.flatMap(probe, (a) => check(a) ? Effect.succeed(a) : Effect.andThen(Effect.sleep("50 millis"), until(probe, check)))

const closedPort = Effect.callback<number>((resume) => {
  const probe = createServer()
  probe.listen(0, "127.0.0.1", () => {
    const address = probe.address()
    probe.close(() => resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : 1)))
  })
})

describe.skipIf(!RedisServer.present)("effect-mcp-transport serve --http --redis", () => {
  it.live("two instances on one Redis both start and answer a tool of the example server", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const env = { MCP_REQUEST_STATE_KEYS: KEYS }
      const one = yield* run(["serve", "--http", "--port", "0", "--redis", redis.url, "--redis-prefix", "cli:"], env)
      const two = yield* run(["serve", "--http", "--port", "0", "--redis", redis.url, "--redis-prefix", "cli:"], env)
      const [u1, u2] = yield* Effect.all([listening(one), listening(two)], { concurrency: "unbounded" })
      for (const url of [u1, u2]) {
        const answer = yield* call(url, { name: "add", arguments: { a: 2, b: 3 } })
        expect(answer.status).toBe(200)
        expect(JSON.stringify(answer.body.result)).toContain("5")
      }
    }).pipe(Effect.scoped), 90_000)

  it.live("prints where its health is read; health shows the Redis connection: ok, then 503 unavailable while Redis is down", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const one = yield* run(["serve", "--http", "--port", "0", "--redis", redis.url], { MCP_REQUEST_STATE_KEYS: KEYS })
      const url = yield* listening(one)
      const health = yield* Effect.callback<string, Error>((resume) => {
        const check = () => {
          const m = /^health (http:\/\/\S+) \(store: redis\)$/m.exec(one.stderr())
          if (m !== null) resume(Effect.succeed(m[1]!))
        }
        one.child.stderr!.on("data", check)
        one.child.once("close", () => resume(Effect.fail(new Error(`exited: ${one.stderr()}`))))
        check()
      })
      expect(health).toBe(`${url}/health`)
      const read = Effect.promise(async () => {
        const res = await fetch(health)
        return { status: res.status, body: await res.json() as unknown }
      })
      expect(yield* read).toEqual({ status: 200, body: { status: "ok", store: { kind: "redis", connected: true } } })
      yield* redis.kill
      const down = yield* until(read, (h) => h.status !== 200)
      expect(down).toEqual({ status: 503, body: { status: "unavailable", store: { kind: "redis", connected: false } } })
    }).pipe(Effect.scoped), 90_000)

  it.live("usage: --redis needs --http and the keys; --redis-prefix needs --redis (exit 2); Redis unreachable: exit 3", () =>
    Effect.gen(function*() {
      const port = yield* closedPort
      const noHttp = yield* run(["serve", "--redis", "redis://127.0.0.1:1"])
      const noKeys = yield* run(["serve", "--http", "--port", "0", "--redis", "redis://127.0.0.1:1"], { MCP_REQUEST_STATE_KEYS: "" })
      const prefixAlone = yield* run(["serve", "--http", "--port", "0", "--redis-prefix", "x:"])
      const unreachable = yield* run(["serve", "--http", "--port", "0", "--redis", `redis://127.0.0.1:${port}`], {
        MCP_REQUEST_STATE_KEYS: KEYS
      })
      expect(yield* Effect.promise(() => noHttp.exited)).toBe(2)
      expect(noHttp.stderr().trim()).toBe("effect-mcp-transport: --port, --host and --redis need --http")
      expect(yield* Effect.promise(() => noKeys.exited)).toBe(2)
      expect(noKeys.stderr().trim()).toMatch(/^effect-mcp-transport: --redis serving the stateless era needs MCP_REQUEST_STATE_KEYS/)
      expect(yield* Effect.promise(() => prefixAlone.exited)).toBe(2)
      expect(prefixAlone.stderr().trim()).toBe("effect-mcp-transport: --redis-prefix needs --redis")
      expect(yield* Effect.promise(() => unreachable.exited)).toBe(3)
      // The Redis client's own warning comes first; the last line is ours.
      expect(unreachable.stderr().trim().split("\n").at(-1)).toMatch(
        new RegExp(`^effect-mcp-transport: cannot connect to redis://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`)
      )
    }).pipe(Effect.scoped), 90_000)
})
