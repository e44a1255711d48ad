/**
 * Three instances of one server (stateless era, HTTP, each its own child
 * process) sharing a real Redis, behind a round-robin forwarder on
 * loopback: a requestState issued by one is accepted by another while the
 * signing keys roll; listens held by all three each get a notification
 * published through a fourth request on C exactly once; with Redis down a
 * request that needs it is refused at once with 503 and `Retry-After` (one
 * that does not is served), and once Redis is back everything works again.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import { createClient } from "redis"
import * as RequestMeta from "../../../src/RequestMeta.ts"
import * as RedisServer from "../../fixtures/RedisServer.ts"

const MODERN = "2026-07-28"
const FIXTURE = fileURLToPath(new URL("../../fixtures/fleet-server.ts", import.meta.url))
const PREFIX = "fleet:"
const OLD_KEY = "o".repeat(32)
const NEW_KEY = "n".repeat(32)

interface Instance {
  readonly name: string
  readonly url: string
  readonly child: ChildProcess
}

/** One instance as a child process; stopped (SIGTERM, then SIGKILL) when the scope closes. */
const instance = (name: string, redisUrl: string, keys: ReadonlyArray<string>): Effect.Effect<Instance, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<Instance>((resume) => {
      const child = spawn(process.execPath, [FIXTURE, "--redis", redisUrl, "--name", name, "--prefix", PREFIX, "--keys", keys.join(",")], {
        stdio: ["ignore", "pipe", "pipe"]
      })
      let out = ""
      let err = ""
      child.stderr!.on("data", (chunk: Buffer) => void (err += chunk.toString()))
      child.stdout!.on("data", (chunk: Buffer) => {
        out += chunk.toString()
        const line = out.split("\n").find((l) => l.startsWith("{"))
        if (line !== undefined && out.includes("\n")) resume(Effect.succeed({ name, url: JSON.parse(line).url, child }))
      })
      child.once("exit", (code) => resume(Effect.die(new Error(`instance ${name} exited (${code}) before listening:\n${err}`))))
    }),
    ({ child }) =>
      Effect.callback<void>((resume) => {
        if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
        const hard = setTimeout(() => child.kill("SIGKILL"), 10_000)
        child.once("exit", () => {
          clearTimeout(hard)
          resume(Effect.void)
        })
        child.kill("SIGTERM")
      })
  )

/** A forwarder on loopback: each request to the next instance in turn, streamed both ways, tagged `x-instance`. */
const forwarder = (instances: ReadonlyArray<Instance>): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<{ server: http.Server; url: string }>((resume) => {
      let next = 0
      const server = http.createServer((req, res) => {
        const target = instances[next++ % instances.length]
        const upstream = http.request(target.url, { method: req.method, headers: req.headers }, (answer) => {
          res.writeHead(answer.statusCode ?? 502, { ...answer.headers, "x-instance": target.name })
          answer.pipe(res)
        })
        upstream.on("error", () => res.destroy())
        res.on("close", () => upstream.destroy())
        req.pipe(upstream)
      })
      server.listen(0, "127.0.0.1", () => {
        resume(Effect.succeed({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp` }))
      })
    }),
    ({ server }) =>
      Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map(({ url }) => url))

const meta = () => RequestMeta.requestMeta({ protocolVersion: MODERN, clientCapabilities: { elicitation: { form: {} } } })

let ids = 0
/** A stateless-era POST with the headers our client sends. */
const modernPost = (url: string, method: string, params: Record<string, unknown>, signal?: AbortSignal) => {
  const full = { ...params, _meta: meta() }
  return fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...RequestMeta.standardHeaders(MODERN, method, full)
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: ++ids, method, params: full }),
    ...(signal === undefined ? {} : { signal })
  })
}

type Frame = Record<string, any>

const resultOf = (url: string, method: string, params: Record<string, unknown>) =>
  Effect.promise(async () => {
    const res = await modernPost(url, method, params)
    const body = await res.text()
    const json = res.headers.get("content-type")?.includes("text/event-stream")
      ? body.split("\n").filter((l) => l.startsWith("data:")).map((l) => JSON.parse(l.slice(5))).find((m) => "id" in m)
      : JSON.parse(body)
    return json?.result as Frame
  })

/** An open listen: every message it carried so far, and a wait for one that matches. */
interface Listen {
  readonly instance: string
  readonly messages: Array<Frame>
  readonly until: (f: (m: Frame) => boolean) => Effect.Effect<void>
}

const listen = (url: string, uris: ReadonlyArray<string>): Effect.Effect<Listen, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const abort = new AbortController()
      const res = await modernPost(url, "subscriptions/listen", { notifications: { resourceSubscriptions: uris } }, abort.signal)
      if (res.status !== 200) throw new Error(`listen: HTTP ${res.status}`)
      const messages: Array<Frame> = []
      const waiters = new Set<() => void>()
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
      let buffer = ""
      void (async () => {
        try {
          for (;;) {
            const { done, value } = await reader.read()
            if (done) return
            buffer += value
            let at: number
            while ((at = buffer.indexOf("\n\n")) !== -1) {
              const event = buffer.slice(0, at)
              buffer = buffer.slice(at + 2)
              for (const line of event.split("\n")) if (line.startsWith("data:")) messages.push(JSON.parse(line.slice(5)))
            }
            for (const w of waiters) w()
          }
        } catch {
          // aborted at scope close
        }
      })()
      const until = (f: (m: Frame) => boolean) =>
        Effect.callback<void>((resume) => {
          const check = () => {
            if (messages.some(f)) {
              waiters.delete(check)
              resume(Effect.void)
            }
          }
          waiters.add(check)
          check()
          return Effect.sync(() => void waiters.delete(check))
        })
      return { listen: { instance: res.headers.get("x-instance") ?? "?", messages, until }, abort }
    }),
    ({ abort }) => Effect.sync(() => abort.abort())
  ).pipe(Effect.map(({ listen }) => listen))

const updated = (uri: string) => (m: Frame) => m.method === "notifications/resources/updated" && m.params?.uri === uri

/** Subscribers Redis counts on the fleet's notification channel (each instance holds one). */
const subscribers = (url: string) =>
  Effect.promise(async () => {
    const client = createClient({ url })
    client.on("error", () => {})
    await client.connect()
    try {
      const counts = await client.pubSubNumSub(`${PREFIX}bus:notify`)
      return Number(counts[`${PREFIX}bus:notify`] ?? 0)
    } finally {
      client.destroy()
    }
  })

/** Whether an instance's health reports its shared store connected. */
const storeConnected = (url: string) =>
  Effect.promise(async () => {
    const res = await fetch(`${url}/health`)
    const body = (await res.json()) as { store?: { connected?: boolean } }
    return body.store?.connected === true
  })

/** Polls `check` (every 50 ms) until it holds; the test's own timeout bounds it. */
const until = <A, R>(probe: Effect.Effect<A, never, R>, check: (a: A) => boolean): Effect.Effect<A, never, R> =>
  Effect.flatMap(probe, (a) => check(a) ? Effect.succeed(a) : Effect.andThen(Effect.sleep("50 millis"), until(probe, check)))

/** Three instances mid key-roll: A still signs with the old key, B and C already with the new one; all accept both. */
const fleet = Effect.gen(function*() {
  const redis = yield* RedisServer.make()
  const [a, b, c] = yield* Effect.all([
    instance("A", redis.url, [OLD_KEY, NEW_KEY]),
    instance("B", redis.url, [NEW_KEY, OLD_KEY]),
    instance("C", redis.url, [NEW_KEY, OLD_KEY])
  ], { concurrency: "unbounded" })
  const front = yield* forwarder([a, b, c])
  return { redis, a, b, c, front }
})

const ask = { name: "ask" }
const answered = (state: string) => ({
  name: "ask",
  requestState: state,
  inputResponses: { "ask-0": { action: "accept", content: { name: "Ada" } } }
})

describe.skipIf(!RedisServer.present)("a stateless fleet of three on one Redis", () => {
  it.live("a requestState issued by one instance is accepted by another, while the signing keys roll", () =>
    Effect.gen(function*() {
      const { a, b, c } = yield* fleet
      const fromA = yield* resultOf(a.url, "tools/call", ask)
      expect(fromA.resultType).toBe("input_required")
      const onB = yield* resultOf(b.url, "tools/call", answered(fromA.requestState))
      expect(onB.content[0].text).toBe("Ada answered on B")
      // The other way: B signs with the new key, which A already accepts.
      const fromB = yield* resultOf(b.url, "tools/call", ask)
      expect((yield* resultOf(a.url, "tools/call", answered(fromB.requestState))).content[0].text).toBe("Ada answered on A")
      expect((yield* resultOf(c.url, "tools/call", answered(fromB.requestState))).content[0].text).toBe("Ada answered on C")
    }).pipe(Effect.scoped), 120_000)

  it.live("listens on all three each get a publish made on C exactly once; Redis down: 503 + Retry-After, back up: works again", () =>
    Effect.gen(function*() {
      const { c, front, redis } = yield* fleet
      // Round robin: one listen on each instance.
      const listens = yield* Effect.forEach(["A", "B", "C"], () => listen(front, ["file:///u1", "file:///u2"]))
      expect(listens.map((l) => l.instance).sort()).toEqual(["A", "B", "C"])
      for (const l of listens) yield* l.until((m) => m.method === "notifications/subscriptions/acknowledged")

      expect((yield* resultOf(c.url, "tools/call", { name: "publish", arguments: { uri: "file:///u1" } })).content[0].text)
        .toBe("published on C")
      // A second publish after it: once it has arrived, the first has had every chance to arrive twice.
      yield* resultOf(c.url, "tools/call", { name: "publish", arguments: { uri: "file:///u2" } })
      for (const l of listens) {
        yield* l.until(updated("file:///u2"))
        expect(l.messages.filter(updated("file:///u1")).length).toBe(1)
        expect(l.messages.filter(updated("file:///u2")).length).toBe(1)
      }

      // Redis down: a listen needs the bus, so it is refused at once; a plain call needs nothing shared.
      yield* redis.kill
      const refused = yield* until(
        Effect.promise(async () => {
          const res = await modernPost(front, "subscriptions/listen", { notifications: { resourceSubscriptions: ["file:///u3"] } })
          // An instance that has not yet seen the connection drop: end that listen, ask again.
          if (res.status === 200) await res.body?.cancel()
          return res
        }),
        (res) => res.status !== 200
      )
      expect(refused.status).toBe(503)
      expect(refused.headers.get("retry-after")).toBe("1")
      expect((yield* Effect.promise(() => refused.json())).error.message).toMatch(/shared store cannot be reached/)
      for (let i = 0; i < 3; i++) {
        const whoami = yield* resultOf(front, "tools/call", { name: "whoami" })
        expect(["A", "B", "C"]).toContain(whoami.content[0].text)
      }

      // Back up: once every instance has subscribed again, listens and publishes work as before.
      yield* redis.start
      yield* until(subscribers(redis.url), (n) => n === 3)
      const again = yield* Effect.forEach(["A", "B", "C"], () =>
        until(
          Effect.exit(listen(front, ["file:///u3"])),
          (exit) => exit._tag === "Success"
        ).pipe(Effect.flatMap((exit) => exit)))
      for (const l of again) yield* l.until((m) => m.method === "notifications/subscriptions/acknowledged")
      // No listen above need have landed on C, whose own connection may still be reconnecting: a
      // notification it cannot publish is dropped (with a warning), so publish once its health says so.
      yield* until(storeConnected(c.url), (connected) => connected)
      yield* resultOf(c.url, "tools/call", { name: "publish", arguments: { uri: "file:///u3" } })
      for (const l of again) {
        yield* l.until(updated("file:///u3"))
        expect(l.messages.filter(updated("file:///u3")).length).toBe(1)
      }
    }).pipe(Effect.scoped), 120_000)
})
