/**
 * Sessions of the handshake era (2025-11-25 over Streamable HTTP) on a
 * fleet of three instances (child processes) sharing a real Redis, with no
 * stickiness: every request of a session may land on any instance.
 *
 * - The official SDK 1.x and 2.x clients and our McpClient, round-robin over
 *   the three: 200 calls each plus the GET stream, no 404; the log level a
 *   client set through one instance is the level on every instance; a
 *   DELETE through one instance is 404 on each of the others.
 * - An elicitation asked by a handler on B and answered through C completes,
 *   50 of 50; a cancel sent through C interrupts the handler running on B.
 *
 * After each, once the sessions ended and the instances stopped, no key is
 * left in Redis.
 */
import { describe, expect, it } from "@effect/vitest"
import { Client as Sdk2Client, StreamableHTTPClientTransport as Sdk2Transport } from "@modelcontextprotocol/client"
import { Client as Sdk1Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport as Sdk1Transport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { Context, Effect, Layer } from "effect"
import * as McpClient from "../../../src/client/McpClient.ts"
import * as StreamableHttpClientTransport from "../../../src/client/StreamableHttpClientTransport.ts"
import * as Fleet from "../../fixtures/Fleet.ts"
import * as RedisServer from "../../fixtures/RedisServer.ts"

const KEY = "k".repeat(32)
const CALLS = 200

type Exchange = { readonly method: string; readonly status: number }

/** `fetch` that notes the method and status of every exchange. */
const recording = (fetch: typeof globalThis.fetch, log: Array<Exchange>): typeof globalThis.fetch => async (input, init) => {
  const method = init?.method ?? (input instanceof Request ? input.method : "GET")
  const response = await fetch(input, init)
  log.push({ method, status: response.status })
  return response
}

const textOf = (result: unknown) =>
  ((result as { content?: ReadonlyArray<{ text?: string }> }).content ?? []).map((c) => c.text ?? "").join("")

/** A POST naming the session, sent to one instance: its status. */
const statusOn = (fleet: Fleet.Fleet, name: string, sessionId: string) =>
  Effect.promise(async () => {
    const response = await fleet.only(name)(fleet.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-session-id": sessionId,
        "mcp-protocol-version": "2025-11-25"
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" })
    })
    await response.body?.cancel()
    return response.status
  })

/** What the running instances keep of their own: inboxes and leases (gone once they stop). */
const isInstanceKey = (k: string) =>
  k.startsWith("fleet:inbox:") || k.startsWith("fleet:instance:") || k === "fleet:instances" || k === "fleet:fence"

const until = <A>(probe: Effect.Effect<A>, check: (a: A) => boolean): Effect.Effect<A> =>
  Effect.flatMap(probe, (a) => check(a) ? Effect.succeed(a) : Effect.andThen(Effect.sleep("50 millis"), until(probe, check)))

/** The keys left under the fleet's prefix, once the instances have stopped. */
const keysAfter = <A, E>(redis: RedisServer.RedisServer, run: (fleet: Fleet.Fleet) => Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    yield* Effect.scoped(Effect.flatMap(Fleet.start({ redisUrl: redis.url, args: ["--keys", KEY] }), run))
    return yield* RedisServer.keysUnder(redis.url, "fleet:")
  })

/** The names of the instances that answered `level`, each with what it says of the session. */
const levelsOf = (call: () => Promise<unknown>) =>
  Effect.promise(async () => {
    const seen = new Map<string, string>()
    for (let i = 0; i < 6; i++) {
      const text = textOf(await call())
      seen.set(text.slice(text.lastIndexOf(" ") + 1), text.slice(0, text.lastIndexOf(" on ")))
    }
    return Object.fromEntries([...seen].sort())
  })

describe.skipIf(!RedisServer.present && process.env.CI !== "true")("Handshake-era sessions on a fleet", () => {
  it.live("SDK 1.x, SDK 2.x and McpClient round-robin over three instances: calls and the GET stream, no 404; DELETE through one is 404 on the others", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const left = yield* keysAfter(redis, (fleet) =>
        Effect.gen(function*() {
          // SDK 1.x
          const sdk1Log: Array<Exchange> = []
          const sdk1Transport = new Sdk1Transport(new URL(fleet.url), { fetch: recording(fleet.roundRobin, sdk1Log) })
          const sdk1 = new Sdk1Client({ name: "sdk1", version: "1.0.0" }, { capabilities: {} })
          const sdk1Served = yield* Effect.promise(async () => {
            await sdk1.connect(sdk1Transport)
            await sdk1.setLoggingLevel("debug")
            const served = new Set<string>()
            for (let i = 0; i < CALLS; i++) served.add(textOf(await sdk1.callTool({ name: "whoami" })))
            return served
          })
          expect([...sdk1Served].sort()).toEqual(["A", "B", "C"])
          expect(yield* levelsOf(() => sdk1.callTool({ name: "level" }))).toEqual({
            A: "debug ready sdk1",
            B: "debug ready sdk1",
            C: "debug ready sdk1"
          })

          // SDK 2.x, in the handshake era
          const sdk2Log: Array<Exchange> = []
          const sdk2Transport = new Sdk2Transport(new URL(fleet.url), { fetch: recording(fleet.roundRobin, sdk2Log) })
          const sdk2 = new Sdk2Client({ name: "sdk2", version: "2.0.0" }, { capabilities: {}, versionNegotiation: { mode: "legacy" } })
          const sdk2Served = yield* Effect.promise(async () => {
            await sdk2.connect(sdk2Transport)
            await sdk2.setLoggingLevel("warning")
            const served = new Set<string>()
            for (let i = 0; i < CALLS; i++) served.add(textOf(await sdk2.callTool({ name: "whoami" })))
            return served
          })
          expect([...sdk2Served].sort()).toEqual(["A", "B", "C"])
          expect(yield* levelsOf(() => sdk2.callTool({ name: "level" }))).toEqual({
            A: "warning ready sdk2",
            B: "warning ready sdk2",
            C: "warning ready sdk2"
          })

          // Ours, pinned to the handshake era; its scope's end ends the session.
          const oursLog: Array<Exchange> = []
          const oursServed = yield* Effect.scoped(Effect.gen(function*() {
            const client = Context.get(
              yield* Layer.build(McpClient.layer({ protocol: "2025-11-25", clientInfo: { name: "ours", version: "1.0.0" } }).pipe(
                Layer.provide(StreamableHttpClientTransport.layer({ url: fleet.url, listen: true })),
                Layer.provide(Fleet.httpClient(recording(fleet.roundRobin, oursLog)))
              )),
              McpClient.McpClient
            )
            const served = new Set<string>()
            for (let i = 0; i < CALLS; i++) served.add(textOf(yield* client.callTool({ name: "whoami" })))
            return served
          }))
          expect([...oursServed].sort()).toEqual(["A", "B", "C"])

          // Every client held its GET stream, and nothing it sent was 404.
          for (const log of [sdk1Log, sdk2Log, oursLog]) {
            expect(log.filter((e) => e.status === 404)).toEqual([])
            expect(log.some((e) => e.method === "GET" && e.status === 200)).toBe(true)
            expect(log.filter((e) => e.method === "POST").length).toBeGreaterThanOrEqual(CALLS)
          }

          // A DELETE through one instance ends the session on all of them.
          for (const [transport, client] of [[sdk1Transport, sdk1], [sdk2Transport, sdk2]] as const) {
            const sessionId = transport.sessionId!
            yield* Effect.promise(() => transport.terminateSession())
            for (const name of fleet.names) {
              expect([name, yield* statusOn(fleet, name, sessionId)]).toEqual([name, 404])
            }
            yield* Effect.promise(() => client.close())
          }
          // Every copy and every stream of the ended sessions is gone; the instances' inboxes and leases remain while they run.
          const live = yield* until(RedisServer.keysUnder(redis.url, "fleet:"), (keys) => keys.every(isInstanceKey))
          expect(live).toHaveLength(3 + 3 + 2)
        }))
      expect(left).toEqual([])
    }).pipe(Effect.scoped), { timeout: 300_000 })

  it.live("an elicitation asked on B and answered through C completes 50 of 50; a cancel sent through C interrupts B's handler", () =>
    Effect.gen(function*() {
      const redis = yield* RedisServer.make()
      const left = yield* keysAfter(redis, (fleet) =>
        Effect.gen(function*() {
          // Tool calls go to B; everything else (initialize, answers, cancels, the GET stream) to C.
          const callsOnB: typeof globalThis.fetch = (input, init) =>
            typeof init?.body === "string" && init.body.includes(`"method":"tools/call"`)
              ? fleet.only("B")(input, init)
              : fleet.only("C")(input, init)
          const started = new Map<string, () => void>()
          const watching: typeof globalThis.fetch = async (input, init) => {
            const response = await callsOnB(input, init)
            const token = typeof init?.body === "string" ? /"token":"([^"]+)"/.exec(init.body)?.[1] : undefined
            // The hold's stream opened: its handler runs on B.
            if (token !== undefined) started.get(token)?.()
            return response
          }
          const transport = new Sdk1Transport(new URL(fleet.url), { fetch: watching })
          const client = new Sdk1Client({ name: "asker", version: "1.0.0" }, { capabilities: { elicitation: {} } })
          let asked = 0
          client.setRequestHandler(ElicitRequestSchema, async () => {
            asked++
            return { action: "accept", content: { name: "Ada" } }
          })
          const answers = yield* Effect.promise(async () => {
            await client.connect(transport)
            const all: Array<string> = []
            for (let round = 0; round < 5; round++) {
              const texts = await Promise.all(
                Array.from({ length: 10 }, () => client.callTool({ name: "ask" }).then(textOf))
              )
              all.push(...texts)
            }
            return all
          })
          expect(answers).toEqual(Array.from({ length: 50 }, () => "Ada answered on B"))
          expect(asked).toBe(50)

          const interrupted = yield* Effect.promise(async () => {
            const abort = new AbortController()
            const running = new Promise<void>((resolve) => started.set("t1", resolve))
            const held = client.callTool({ name: "hold", arguments: { token: "t1" } }, undefined, { signal: abort.signal })
              .then(() => "answered", () => "cancelled")
            await running
            abort.abort("enough")
            const outcome = await held
            // Answers once the hold on B has been interrupted.
            const confirmed = textOf(await client.callTool({ name: "interrupted", arguments: { token: "t1" } }))
            return { outcome, confirmed }
          })
          expect(interrupted).toEqual({ outcome: "cancelled", confirmed: "interrupted on B" })

          yield* Effect.promise(async () => {
            await transport.terminateSession()
            await client.close()
          })
          yield* until(RedisServer.keysUnder(redis.url, "fleet:"), (keys) => keys.every(isInstanceKey))
        }))
      expect(left).toEqual([])
    }).pipe(Effect.scoped), { timeout: 300_000 })
})
