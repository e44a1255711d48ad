/**
 * The bridge's era matrix, with real child processes and loopback HTTP:
 * upstreams of three kinds (2025-only, both eras, 2026-only) from three
 * implementations (our CLI's `serve --stdio --eras …`, the official SDK v2
 * server, effect/ai's McpServer), each behind the default front and behind
 * the `--front-era` that matches it, reached by a client of each era (our
 * McpClient pinned to 2026-07-28, and pinned to 2025-11-25). Every cell
 * connects, lists the tools and calls `echo`, or fails with the reason
 * docs/bridge.md gives for it. Our server is also put behind
 * `--front-era passthrough` where that is not the match, for its refusals.
 *
 * One bridge per (upstream, front) serves both clients; the bridges of an
 * implementation run at once.
 */
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Option, Scope } from "effect"
import * as Bridge from "../../src/bridge/Bridge.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"
import * as HttpServerTransport from "../../src/server/HttpServerTransport.ts"
import { ensureBuilt, MAIN } from "../cli/runCli.ts"
import { peerPath } from "../fixtures/peers/launch.ts"
import { textOf } from "./helpers.ts"

type Kind = "2025-only" | "both" | "2026-only"
type ClientEra = "2026-07-28" | "2025-11-25"
type Front = "auto" | "passthrough" | "stateless" | "handshake"

const KINDS: ReadonlyArray<Kind> = ["2025-only", "both", "2026-only"]
const CLIENT_ERAS: ReadonlyArray<ClientEra> = ["2026-07-28", "2025-11-25"]

/** The `--front-era` that matches each kind of upstream. */
const PINNED: Record<Kind, Front> = { "2025-only": "stateless", both: "passthrough", "2026-only": "handshake" }

interface Implementation {
  readonly name: string
  /** `node <args>` for an upstream of the kind. */
  readonly args: (kind: Kind) => ReadonlyArray<string>
  /** What `echo {text}` answers. */
  readonly echo: (text: string) => string
  /** Also behind `--front-era passthrough` where that is not the match (its refusals). */
  readonly refusals?: boolean
}

const ERAS_FLAG: Record<Kind, string> = { "2025-only": "legacy", both: "both", "2026-only": "modern" }
const PEER_MODE: Record<Kind, string> = { "2025-only": "legacy", both: "dual", "2026-only": "modern" }

const IMPLEMENTATIONS: ReadonlyArray<Implementation> = [
  {
    name: "our CLI (serve --stdio --eras …)",
    args: (k) => [MAIN, "serve", "--stdio", "--eras", ERAS_FLAG[k]],
    echo: (t) => t,
    refusals: true
  },
  {
    name: "the official SDK v2 server",
    args: (k) => [peerPath("sdk2-server.ts"), "--stdio", "--mode", PEER_MODE[k]],
    echo: (t) => `echo: ${t}`
  },
  {
    name: "effect/ai's McpServer",
    args: (k) => [peerPath("effect-ai-server.ts"), "--stdio", "--mode", PEER_MODE[k]],
    echo: (t) => `echo: ${t}`
  }
]

/**
 * What a cell does. `served`: the era the client ends up speaking (always
 * its own). `fails`: the error it gets, as docs/bridge.md lists it.
 */
type Outcome =
  | { readonly _tag: "Served" }
  | { readonly _tag: "Fails"; readonly error: Record<string, unknown> }

const expected = (kind: Kind, era: ClientEra, front: Front): Outcome => {
  // The handshake front serves only the handshake era: the HTTP transport refuses the stateless one.
  if (front === "handshake" && era === "2026-07-28") return { _tag: "Fails", error: { _tag: "McpServerError", reason: { _tag: "RpcError", code: -32600 } } }
  if (front === "passthrough") {
    // The bridge's -32022 names only handshake revisions: a client pinned to 2026-07-28 gives up.
    if (kind === "2025-only" && era === "2026-07-28") {
      return { _tag: "Fails", error: { _tag: "McpProtocolError", reason: { _tag: "UnsupportedProtocolVersion", requested: "2026-07-28" } } }
    }
    // The upstream's own refusal of initialize, passed on.
    if (kind === "2026-only" && era === "2025-11-25") return { _tag: "Fails", error: { _tag: "McpServerError", reason: { _tag: "RpcError", code: -32022 } } }
  }
  return { _tag: "Served" }
}

/**
 * The upstream processes a bridge starts for the two clients, which tells
 * the route each took. `auto`: a 2026-07-28 client costs one process (the
 * shared connection of that era; for a 2025-only upstream, the probe's,
 * closed, then the converting pool's), a 2025 client one (its session's;
 * for a 2026-only upstream, the refused session's, closed, then the
 * converting front's). A pinned converting front serves both with one; a
 * refused client costs none.
 */
const SPAWNS: Record<Front, Record<Kind, number>> = {
  auto: { "2025-only": 3, both: 2, "2026-only": 3 },
  // The 2025-only upstream: the probe's process, closed, and the session's.
  passthrough: { "2025-only": 2, both: 2, "2026-only": 2 },
  stateless: { "2025-only": 1, both: 1, "2026-only": 1 },
  handshake: { "2025-only": 1, both: 1, "2026-only": 1 }
}

/** `node <args>` behind `front` on 127.0.0.1:0, for the life of `scope`, with the pids of its upstreams. */
const bridgeTo = (args: ReadonlyArray<string>, front: Front, scope: Scope.Scope) =>
  Effect.gen(function*() {
    const pids: Array<number> = []
    const connect = StdioClientTransport.make({
      command: process.execPath,
      args: [...args],
      shutdown: { gracePeriod: "300 millis", killAfter: "300 millis" },
      stderr: { log: false }
    }).pipe(Effect.tap((t) => Effect.sync(() => void pids.push(t.pid))))
    const services = yield* Layer.buildWithScope(
      Bridge.layerHttp({ connect, front }, { port: 0 }).pipe(Layer.provide(NodeServices.layer)),
      scope
    )
    return { url: Option.getOrThrow(Context.get(services, HttpServerTransport.HttpServerTransport).url), pids }
  })

/** One cell: connect in `era`, list the tools, call `echo`; what happened. */
const cell = (url: string, era: ClientEra, implementation: Implementation) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const run = Effect.gen(function*() {
      const client = yield* McpClient.connect(StreamableHttpClientTransport.make({ url }), {
        protocol: era,
        clientInfo: { name: "matrix", version: "1.0.0" },
        requestTimeout: "30 seconds"
      }).pipe(Scope.provide(scope))
      expect(client.protocolVersion).toBe(era)
      const tools = yield* client.listAllTools()
      expect(tools.map((t) => t.name)).toContain("echo")
      const result = yield* client.callTool({ name: "echo", arguments: { text: era } })
      expect(textOf(result)).toBe(implementation.echo(era))
    })
    return yield* Effect.exit(run).pipe(Effect.ensuring(Scope.close(scope, Exit.void)))
  })

const matrixFor = (implementation: Implementation) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const bridges = KINDS.flatMap((kind) =>
      [
        "auto" as const,
        PINNED[kind],
        ...(implementation.refusals === true && PINNED[kind] !== "passthrough" ? ["passthrough" as const] : [])
      ].map((front) => ({ kind, front }))
    )
    const rows = yield* Effect.forEach(bridges, ({ front, kind }) =>
      Effect.gen(function*() {
        const { pids, url } = yield* bridgeTo(implementation.args(kind), front, scope)
        const cells = yield* Effect.forEach(CLIENT_ERAS, (era) =>
          Effect.map(cell(url, era, implementation), (exit) => ({ kind, front, era, exit })), { concurrency: "unbounded" })
        return { kind, front, spawned: pids.length, cells }
      }), { concurrency: "unbounded" })
    yield* Scope.close(scope, Exit.void)
    for (const { front, kind, spawned } of rows) {
      expect(spawned, `${implementation.name}, ${kind} upstream, front ${front}: upstream processes`).toBe(SPAWNS[front][kind])
    }
    for (const { era, exit, front, kind } of rows.flatMap((row) => row.cells)) {
      const label = `${implementation.name}, ${kind} upstream, front ${front}, ${era} client`
      const outcome = expected(kind, era, front)
      if (outcome._tag === "Served") {
        expect(Exit.isSuccess(exit), `${label}: ${Exit.isFailure(exit) ? String(exit.cause) : ""}`).toBe(true)
      } else {
        expect(Exit.isFailure(exit), `${label} should fail`).toBe(true)
        if (Exit.isFailure(exit)) {
          const error = exit.cause.reasons.find((r) => r._tag === "Fail")
          expect(error?._tag === "Fail" ? error.error : exit.cause, label).toMatchObject(outcome.error)
        }
      }
    }
  }).pipe(Effect.provide(NodeHttpClient.layerUndici))

describe("bridge: every upstream kind × client era × front", { timeout: 120_000 }, () => {
  for (const implementation of IMPLEMENTATIONS) {
    it.live(implementation.name, () => {
      if (implementation.args("both")[0] === MAIN) ensureBuilt()
      return matrixFor(implementation)
    })
  }
})
