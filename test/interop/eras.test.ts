/**
 * Our McpClient against the peers of both eras (test/fixtures/peers/): the
 * official SDK v2 server (modern, dual, legacy) and effect/ai's McpServer
 * (modern, dual), each over Streamable HTTP and stdio, all serving one
 * catalogue (catalogue.ts). One table of rows, one scenario: every row
 * asserts the era the client picked and what went out before it, then runs
 * the same behaviour checks. Where a peer cannot carry a behaviour, the row
 * says why and the check is skipped.
 */
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Scope, Stream, SubscriptionRef } from "effect"
import type * as ClientTransport from "../../src/client/ClientTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"
import * as Catalogue from "../fixtures/peers/catalogue.ts"
import { peerPath, startHttp } from "../fixtures/peers/launch.ts"
import { isAlive } from "../fixtures/stdio-helpers.ts"
import { recorded } from "./RecordedTransport.ts"

const Env = Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici)

type Era = "modern" | "legacy"

interface Peer {
  readonly file: "sdk2-server.ts" | "effect-ai-server.ts"
  readonly mode: "modern" | "dual" | "legacy"
  readonly transport: "http" | "stdio"
  /** The era a client in `auto` must pick. */
  readonly era: Era
}

interface Row extends Peer {
  readonly protocol: "auto" | "2026-07-28" | "2025-11-25"
  /** The era this row speaks (the peer's in `auto`, the pinned one otherwise). */
  readonly speaks: Era
  /** Why a behaviour cannot be checked against this peer in this era (the check is then skipped). */
  readonly skip: Skips | undefined
}

interface Skips {
  readonly askName?: string
  readonly listChanged?: string
}

const peers: ReadonlyArray<Peer> = [
  { file: "sdk2-server.ts", mode: "modern", transport: "http", era: "modern" },
  { file: "sdk2-server.ts", mode: "dual", transport: "http", era: "modern" },
  { file: "sdk2-server.ts", mode: "legacy", transport: "http", era: "legacy" },
  { file: "sdk2-server.ts", mode: "modern", transport: "stdio", era: "modern" },
  { file: "sdk2-server.ts", mode: "dual", transport: "stdio", era: "modern" },
  { file: "sdk2-server.ts", mode: "legacy", transport: "stdio", era: "legacy" },
  { file: "effect-ai-server.ts", mode: "modern", transport: "http", era: "modern" },
  { file: "effect-ai-server.ts", mode: "dual", transport: "http", era: "modern" },
  { file: "effect-ai-server.ts", mode: "modern", transport: "stdio", era: "modern" },
  { file: "effect-ai-server.ts", mode: "dual", transport: "stdio", era: "modern" }
]

/** What a peer cannot do in an era, with the evidence. */
const skipsOf = (peer: Peer, speaks: Era): Skips | undefined => {
  if (peer.file === "sdk2-server.ts" && peer.mode === "dual" && peer.transport === "http" && speaks === "legacy") {
    return {
      // The SDK serves 2025-era HTTP requests statelessly, one server per request: its legacy shim answers the
      // call with an isError result ("per-request legacy serving cannot receive server-to-client requests").
      askName: "SDK v2 dual HTTP serves 2025 requests per request: no server-to-client requests",
      // Same reason: no session, and GET is answered 405, so no notification outside a request reaches us.
      listChanged: "SDK v2 dual HTTP serves 2025 requests per request: no standalone stream (GET → 405)"
    }
  }
  return undefined
}

const rows: ReadonlyArray<Row> = peers.flatMap((peer): ReadonlyArray<Row> => {
  const pinned = peer.era === "modern" ? "2026-07-28" as const : "2025-11-25" as const
  const base = [
    { ...peer, protocol: "auto" as const, speaks: peer.era, skip: skipsOf(peer, peer.era) },
    { ...peer, protocol: pinned, speaks: peer.era, skip: skipsOf(peer, peer.era) }
  ]
  // A dual peer also serves a client pinned to the handshake era.
  return peer.mode === "dual"
    ? [...base, { ...peer, protocol: "2025-11-25" as const, speaks: "legacy" as const, skip: skipsOf(peer, "legacy") }]
    : base
})

const textOf = (result: { readonly content: ReadonlyArray<unknown> }) =>
  result.content.map((c) => (c as { text?: string }).text ?? "").join("")

/** Starts collecting now (subscribed when this returns). */
const collect = <A, E>(stream: Stream.Stream<A, E>, n: number) =>
  Stream.take(stream, n).pipe(Stream.runCollect, Effect.forkChild({ startImmediately: true }))

interface Connected {
  readonly client: McpClient.McpClientShape
  readonly sent: ReadonlyArray<string>
  readonly close: Effect.Effect<void>
  /** The stdio child's pid. */
  readonly pid: number | undefined
}

/**
 * The HTTP peers, one process per fixture and mode for the whole file: each row connects a client
 * of its own (its own session or none), and loading a peer costs up to a second and a half of CPU.
 * A stdio peer is the connection, so each stdio row starts its own.
 */
const httpPeers = new Map<string, Promise<string>>()
const httpPeerScope = Effect.runSync(Scope.make())
afterAll(() => Effect.runPromise(Scope.close(httpPeerScope, Exit.void)))
const httpPeerUrl = (row: Row) =>
  Effect.promise(() => {
    const key = `${row.file} ${row.mode}`
    let url = httpPeers.get(key)
    if (url === undefined) {
      url = Effect.runPromise(Effect.map(startHttp(row.file, ["--mode", row.mode]), (peer) => peer.url).pipe(Scope.provide(httpPeerScope)))
      httpPeers.set(key, url)
    }
    return url
  })

const connectRow = (row: Row) =>
  Effect.gen(function*() {
    const sent: Array<string> = []
    let pid: number | undefined
    const transport: Effect.Effect<
      ClientTransport.ClientTransportShape,
      unknown,
      Scope.Scope | Layer.Success<typeof Env>
    > = row.transport === "http"
      ? StreamableHttpClientTransport.make({ url: yield* httpPeerUrl(row), listen: true })
      : Effect.tap(
        StdioClientTransport.make({
          command: process.execPath,
          args: [peerPath(row.file), "--stdio", "--mode", row.mode],
          shutdown: { gracePeriod: "1 second", killAfter: "1 second" },
          stderr: { log: false }
        }),
        (t) => Effect.sync(() => void (pid = t.pid))
      )
    const scope = yield* Scope.make()
    const client = yield* McpClient.connect(recorded(transport, sent), {
      clientInfo: { name: "eras-interop", version: "1.0.0" },
      protocol: row.protocol,
      // A peer still loading on a busy machine is not a server that ignores the probe.
      probeTimeout: "60 seconds",
      // Over HTTP the stateless era listens only when asked; the handshake era's GET stream is the transport's.
      listen: true,
      handlers: {
        elicit: (params) =>
          Effect.succeed(
            params.mode === "form" && params.message === Catalogue.askNameRequest.message
              ? { action: "accept" as const, content: { name: "Ada" } }
              : { action: "decline" as const }
          )
      }
    }).pipe(Scope.provide(scope))
    return { client, sent, close: Scope.close(scope, Exit.void), pid } satisfies Connected
  })

const negotiated = (row: Row, { client, sent }: Connected) =>
  Effect.sync(() => {
    expect(client.era).toBe(row.speaks)
    expect(client.protocolVersion).toBe(row.speaks === "modern" ? "2026-07-28" : "2025-11-25")
    const opening = sent.slice(0, sent.indexOf(row.speaks === "modern" ? "server/discover" : "initialize") + 1)
    if (row.speaks === "modern") {
      expect(opening).toEqual(["server/discover"])
      expect(sent).not.toContain("initialize")
      expect(client.discoverResult?.supportedVersions).toContain("2026-07-28")
    } else {
      // In auto exactly one probe precedes the handshake; a pinned handshake revision never probes.
      expect(opening).toEqual(row.protocol === "auto" ? ["server/discover", "initialize"] : ["initialize"])
      expect(client.discoverResult).toBeUndefined()
    }
  })

const catalogueCalls = (client: McpClient.McpClientShape) =>
  Effect.gen(function*() {
    const names = (yield* client.listAllTools()).map((t) => t.name)
    expect(names).toEqual(expect.arrayContaining(["echo", "add", "region_echo", "ask_name", "slow", "add_tool"]))
    // Over HTTP in the stateless era the region travels in Mcp-Param-Region too; both peers refuse a call without it.
    expect(textOf(yield* client.callTool({ name: "region_echo", arguments: { region: "eu-west" } }))).toBe(
      Catalogue.regionText("eu-west")
    )
    expect(textOf(yield* client.callTool({ name: "echo", arguments: { text: "hi" } }))).toBe(Catalogue.echoText("hi"))
    expect(textOf(yield* client.callTool({ name: "add", arguments: { a: 2, b: 40 } }))).toBe(Catalogue.addText(2, 40))
    const hello = yield* client.readResource(Catalogue.HELLO_URI)
    // effect/ai's resource contents leave out the mimeType the resource declared.
    expect(hello.contents).toEqual([expect.objectContaining({ uri: Catalogue.HELLO_URI, text: Catalogue.HELLO_TEXT })])
    const greet = yield* client.getPrompt({ name: "greet", arguments: { name: "Ada" } })
    expect(greet.messages.map((m) => (m.content as { text?: string }).text)).toEqual([Catalogue.greetText("Ada")])
  })

const askName = (row: Row, client: McpClient.McpClientShape) =>
  Effect.gen(function*() {
    if (row.skip?.askName !== undefined) {
      // What the peer answers instead, so the skip is dropped once the peer can ask.
      const refused = yield* client.callTool({ name: "ask_name" })
      expect(refused.isError).toBe(true)
      expect(textOf(refused)).toContain("cannot receive server-to-client requests")
      return
    }
    // An input_required round in the stateless era, an elicitation/create request in the handshake era.
    expect(textOf(yield* client.callTool({ name: "ask_name" }))).toBe(Catalogue.helloText("Ada"))
  })

const progress = (client: McpClient.McpClientShape) =>
  Effect.gen(function*() {
    const seen: Array<number> = []
    const result = yield* client.callTool(
      { name: "slow", arguments: { ms: 60 } },
      { onProgress: (p) => Effect.sync(() => void seen.push(p.progress)) }
    )
    expect(textOf(result)).toBe("slept 60 ms")
    expect(seen).toEqual([1, 2, 3])
  })

/** A timed-out call and an interrupted one leave nothing pending, and the client carries on. */
const interruption = (client: McpClient.McpClientShape) =>
  Effect.gen(function*() {
    // The stateless era's subscriptions/listen request stays pending for the connection's life.
    const idle = yield* client.connection.pendingCount
    // The first progress comes after a third of `ms`, so the idle timeout fires first.
    const timedOut = yield* Effect.flip(client.callTool({ name: "slow", arguments: { ms: 30_000 } }, { timeout: "300 millis" }))
    expect(timedOut).toMatchObject({ _tag: "McpTransportError", reason: { _tag: "RequestTimeout" } })
    expect(yield* client.connection.pendingCount).toBe(idle)

    const started = yield* collect(client.progress, 1)
    const fiber = yield* client.callTool({ name: "slow", arguments: { ms: 600 } }, { timeout: "30 seconds" }).pipe(
      Effect.forkChild({ startImmediately: true })
    )
    // The peer is running it once it reports progress.
    yield* Fiber.join(started)
    yield* Fiber.interrupt(fiber)
    expect(yield* client.connection.pendingCount).toBe(idle)
    expect(textOf(yield* client.callTool({ name: "echo", arguments: { text: "after" } }))).toBe(Catalogue.echoText("after"))
  })

const listChanged = (row: Row, client: McpClient.McpClientShape) =>
  Effect.gen(function*() {
    if (row.skip?.listChanged !== undefined) return
    if (row.speaks === "modern") {
      // The listen stream must be acknowledged before a change can be missed or not.
      yield* SubscriptionRef.changes(client.subscription).pipe(
        Stream.filter((s) => s._tag === "Listening" && s.acknowledged.toolsListChanged === true),
        Stream.runHead
      )
    }
    const name = `added_${row.transport}_${row.protocol.replaceAll("-", "")}`
    const changed = yield* collect(client.listChanged, 1)
    expect(textOf(yield* client.callTool({ name: "add_tool", arguments: { name } }))).toBe(Catalogue.addedText(name))
    expect((yield* Fiber.join(changed)).map((n) => n._tag)).toEqual(["ToolListChanged"])
    expect((yield* client.listAllTools()).map((t) => t.name)).toContain(name)
    expect(textOf(yield* client.callTool({ name }))).toBe(Catalogue.addedText(name))
  })

const closing = (row: Row, connected: Connected) =>
  Effect.gen(function*() {
    yield* connected.close
    if (row.transport === "stdio") expect(isAlive(connected.pid!)).toBe(false)
  })

const title = (row: Row) =>
  `${row.file.replace(".ts", "")} --${row.transport} --mode ${row.mode}, protocol ${row.protocol}: ${row.speaks}`

describe("interop: McpClient against the peers of both eras", { timeout: 60_000 }, () => {
  for (const row of rows) {
    it.live(title(row), () =>
      Effect.gen(function*() {
        const connected = yield* connectRow(row)
        const { client } = connected
        yield* negotiated(row, connected)
        yield* catalogueCalls(client)
        yield* askName(row, client)
        yield* progress(client)
        yield* listChanged(row, client)
        yield* interruption(client)
        yield* closing(row, connected)
      }).pipe(Effect.scoped, Effect.provide(Env)))
  }
})
