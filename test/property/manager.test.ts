/**
 * Property: whatever mix of crashes, failing connects, manual reconnects and
 * elapsed time the servers go through, the manager never has more than one
 * live connection per server, and its status stream tells the truth: Ready
 * exactly when a live connection exists, no connection while it waits, one
 * new connection per new generation, and only legal transitions.
 */
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Effect, Fiber, Schedule, Schema, Stream, SubscriptionRef } from "effect"
import { TestClock } from "effect/testing"
import type { ClientTransportShape } from "../../src/client/ClientTransport.ts"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as McpManager from "../../src/client/McpManager.ts"
import { SpawnError } from "../../src/McpError.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import { makeServer } from "../fixtures/router-stdio-server.ts"

type ServerStatus = McpManager.ServerStatus
const SERVERS = ["a", "b"] as const

const Op = Schema.Struct({
  server: Schema.Literals(SERVERS),
  op: Schema.Literals(["kill", "failNext", "reconnect", "advance", "call"])
})

/** The transitions the state machine allows (anything may go to Closed). */
const legal: Record<ServerStatus["_tag"], ReadonlyArray<ServerStatus["_tag"]>> = {
  Connecting: ["Ready", "Reconnecting", "CircuitOpen", "Failed", "Connecting"],
  Ready: ["Reconnecting", "CircuitOpen", "Failed", "Degraded", "Expired", "Connecting"],
  Degraded: ["Reconnecting", "CircuitOpen", "Failed"],
  Expired: ["Connecting"],
  Reconnecting: ["Connecting"],
  CircuitOpen: ["Connecting", "CircuitOpen"],
  Failed: ["Connecting"],
  Closed: []
}

interface Live {
  transport: ClientTransportShape
  pair: InMemoryTransport.InMemoryPair
}

const settle = Effect.gen(function*() {
  for (let i = 0; i < 200; i++) yield* Effect.yieldNow
})

describe("McpManager properties", () => {
  it.effect.prop(
    "status matches reality and there is never more than one connection per server",
    { ops: Arbitrary.array(Arbitrary.schema(Op), { maxLength: 25 }) },
    ({ ops }) =>
      Effect.scoped(Effect.gen(function*() {
        const live = new Map<string, Array<Live>>(SERVERS.map((s) => [s, []]))
        const opened = new Map<string, number>(SERVERS.map((s) => [s, 0]))
        const failNext = new Map<string, number>(SERVERS.map((s) => [s, 0]))
        let maxLive = 0
        const definitions = Object.fromEntries(SERVERS.map((s) => [s, makeServer({ name: s })]))

        const manager = yield* McpManager.make({
          config: { mcpServers: Object.fromEntries(SERVERS.map((s) => [s, { command: "in-memory" }])) },
          transport: (name) =>
            Effect.gen(function*() {
              const failures = failNext.get(name)!
              if (failures > 0) {
                failNext.set(name, failures - 1)
                return yield* new SpawnError({ command: name, args: [], cause: "injected" })
              }
              const handle = yield* McpServer.toHandler(definitions[name]!)
              const pair = yield* InMemoryTransport.makePair(handle.handler)
              const entry: Live = { transport: pair.client, pair }
              // Alive from here until the connection's scope releases it.
              yield* Effect.acquireRelease(
                Effect.sync(() => {
                  const list = live.get(name)!
                  list.push(entry)
                  opened.set(name, opened.get(name)! + 1)
                  maxLive = Math.max(maxLive, list.length)
                }),
                () => Effect.sync(() => live.set(name, live.get(name)!.filter((l) => l !== entry)))
              )
              return pair.client
            }),
          reconnectSchedule: Schedule.spaced("1 second"),
          circuitBreaker: { failureThreshold: 3, cooldown: "5 seconds" },
          callWaitTimeout: "1 millis",
          slowStartThreshold: "1 millis"
        })

        // Every status each server publishes, in order.
        const seen = new Map<string, Array<ServerStatus>>(SERVERS.map((s) => [s, []]))
        const watchers = yield* Effect.forEach(SERVERS, (s) =>
          manager.status(s).pipe(
            Stream.runForEach((st) => Effect.sync(() => void seen.get(s)!.push(st))),
            Effect.forkChild({ startImmediately: true })
          ))

        const check = Effect.gen(function*() {
          yield* settle
          const statuses = yield* manager.statuses
          for (const s of SERVERS) {
            const status = statuses[s]!
            const connections = live.get(s)!
            expect(connections.length).toBeLessThanOrEqual(1)
            if (status._tag === "Ready") {
              expect(connections.length).toBe(1)
              const state = yield* SubscriptionRef.get(connections[0]!.transport.state)
              expect(state._tag).toBe("Ready")
              expect(status.generation).toBe(opened.get(s))
            }
            if (status._tag === "Reconnecting" || status._tag === "CircuitOpen" || status._tag === "Failed") {
              expect(connections.length).toBe(0)
            }
          }
        })

        yield* check
        for (const { op, server } of ops) {
          switch (op) {
            case "kill": {
              const current = live.get(server)![0]
              if (current !== undefined) yield* current.pair.server.kill("injected crash")
              break
            }
            case "failNext":
              failNext.set(server, failNext.get(server)! + 2)
              break
            case "reconnect":
              yield* manager.reconnect(server)
              break
            case "advance":
              yield* TestClock.adjust("2 seconds")
              break
            case "call": {
              const status = (yield* manager.statuses)[server]!
              const call = yield* manager.callTool(`${server}__echo`, { text: "x" }).pipe(
                Effect.exit,
                Effect.forkChild({ startImmediately: true })
              )
              yield* settle
              yield* TestClock.adjust("1 millis")
              const exit = yield* Fiber.join(call)
              // A server that was Ready and was not touched answers.
              if (status._tag === "Ready") expect(exit._tag).toBe("Success")
              break
            }
          }
          yield* check
        }
        expect(maxLive).toBeLessThanOrEqual(1)

        // The stream of each server only ever took legal steps, and each Ready was a new connection.
        for (const s of SERVERS) {
          const statuses = seen.get(s)!
          for (let i = 1; i < statuses.length; i++) {
            const from = statuses[i - 1]!._tag
            const to = statuses[i]!._tag
            if (!legal[from].includes(to)) throw new Error(`${s}: illegal ${from} → ${to} in ${statuses.map((x) => x._tag)}`)
          }
          const generations = statuses.flatMap((st) => (st._tag === "Ready" ? [st.generation] : []))
          expect(generations).toEqual(generations.map((_, i) => i + 1))
          expect(generations.length).toBe(opened.get(s))
        }
        yield* Effect.forEach(watchers, Fiber.interrupt)
        return true
      })),
    { arbitrary: { runs: 40 } }
  )
})
