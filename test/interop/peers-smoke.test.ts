/**
 * The real peers the client is tested against (test/fixtures/peers/), checked
 * on the raw wire, without our McpClient: every variant starts, a modern one
 * answers `server/discover` with per-request `_meta` and a `tools/call echo`
 * carrying the 2026-07-28 routing headers, a legacy one answers `initialize`
 * and then a session's `tools/call`. The wire facts these rely on are
 * recorded in the peers notes (what each era answers to the other).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import {
  LEGACY,
  MODERN,
  modernHeaders,
  modernMeta,
  type HttpPeer,
  startHttp,
  startStdio,
  type StdioPeer
} from "../fixtures/peers/launch.ts"

const discover = { jsonrpc: "2.0", id: 1, method: "server/discover", params: { _meta: modernMeta } }
const echo = (id: number) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "echo", arguments: { text: "hi" }, _meta: modernMeta } })
const initialize = {
  jsonrpc: "2.0",
  id: 3,
  method: "initialize",
  params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: "peers-smoke", version: "0" } }
}
const echoed = { content: [{ type: "text", text: "echo: hi" }] }

const modernOverHttp = (peer: HttpPeer) =>
  Effect.gen(function*() {
    const found = yield* peer.post(discover, modernHeaders("server/discover"))
    expect(found.status).toBe(200)
    expect(found.message?.result?.supportedVersions).toContain(MODERN)
    const called = yield* peer.post(echo(2), modernHeaders("tools/call", "echo"))
    expect(called.status).toBe(200)
    expect(called.message?.result).toMatchObject({ ...echoed, resultType: "complete" })
  })

const legacyOverHttp = (peer: HttpPeer, sessions: boolean) =>
  Effect.gen(function*() {
    const opened = yield* peer.post(initialize)
    expect(opened.status).toBe(200)
    expect(opened.message?.result?.protocolVersion).toBe(LEGACY)
    const session = opened.headers.get("mcp-session-id")
    expect(session !== null).toBe(sessions)
    const headers: Record<string, string> = { "mcp-protocol-version": LEGACY, ...(session === null ? {} : { "mcp-session-id": session }) }
    yield* peer.post({ jsonrpc: "2.0", method: "notifications/initialized" }, headers)
    const called = yield* peer.post({ jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "echo", arguments: { text: "hi" } } }, headers)
    expect(called.message?.result).toMatchObject(echoed)
  })

const modernOverStdio = (peer: StdioPeer) =>
  Effect.gen(function*() {
    const found = yield* peer.request(discover)
    expect(found.result?.supportedVersions).toContain(MODERN)
    const called = yield* peer.request(echo(2))
    expect(called.result).toMatchObject({ ...echoed, resultType: "complete" })
  })

const legacyOverStdio = (peer: StdioPeer) =>
  Effect.gen(function*() {
    const opened = yield* peer.request(initialize)
    expect(opened.result?.protocolVersion).toBe(LEGACY)
    const called = yield* peer.request({ id: 4, method: "tools/call", params: { name: "echo", arguments: { text: "hi" } } })
    expect(called.result).toMatchObject(echoed)
  })

describe("peers: the official SDK v2 server (sdk2-server.ts)", { timeout: 30_000 }, () => {
  it.live("--http --mode modern: discover and echo; initialize is refused with -32022 naming 2026-07-28", () =>
    Effect.scoped(Effect.gen(function*() {
      const peer = yield* startHttp("sdk2-server.ts", ["--mode", "modern"])
      yield* modernOverHttp(peer)
      const refused = yield* peer.post(initialize)
      expect(refused.status).toBe(400)
      expect(refused.message?.error?.code).toBe(-32022)
    })))

  it.live("--http --mode dual: both eras; legacy requests are served without a session", () =>
    Effect.scoped(Effect.gen(function*() {
      const peer = yield* startHttp("sdk2-server.ts", ["--mode", "dual"])
      yield* modernOverHttp(peer)
      yield* legacyOverHttp(peer, false)
    })))

  it.live("--http --mode legacy: a session after initialize; server/discover gets 400 'Server not initialized'", () =>
    Effect.scoped(Effect.gen(function*() {
      const peer = yield* startHttp("sdk2-server.ts", ["--mode", "legacy"])
      yield* legacyOverHttp(peer, true)
      const probed = yield* peer.post(discover, modernHeaders("server/discover"))
      expect(probed.status).toBe(400)
      expect(probed.message?.error?.code).toBe(-32000)
    })))

  it.live("--stdio --mode modern / dual / legacy", () =>
    Effect.gen(function*() {
      yield* Effect.scoped(Effect.flatMap(startStdio("sdk2-server.ts", ["--mode", "modern"]), modernOverStdio))
      yield* Effect.scoped(Effect.flatMap(startStdio("sdk2-server.ts", ["--mode", "dual"]), modernOverStdio))
      yield* Effect.scoped(Effect.flatMap(startStdio("sdk2-server.ts", ["--mode", "dual"]), legacyOverStdio))
      yield* Effect.scoped(Effect.flatMap(startStdio("sdk2-server.ts", ["--mode", "legacy"]), legacyOverStdio))
    }), { timeout: 60_000 })
})

describe("peers: effect/ai McpServer (effect-ai-server.ts)", { timeout: 30_000 }, () => {
  it.live("--http (modern): discover and echo; initialize without MCP-Protocol-Version gets 400 -32020", () =>
    Effect.scoped(Effect.gen(function*() {
      const peer = yield* startHttp("effect-ai-server.ts", [])
      yield* modernOverHttp(peer)
      const refused = yield* peer.post(initialize)
      expect(refused.status).toBe(400)
      expect(refused.message?.error?.code).toBe(-32020)
    })))

  it.live("--http --mode dual: both eras, legacy with a session", () =>
    Effect.scoped(Effect.gen(function*() {
      const peer = yield* startHttp("effect-ai-server.ts", ["--mode", "dual"])
      yield* modernOverHttp(peer)
      yield* legacyOverHttp(peer, true)
    })))

  it.live("--stdio (modern) and --stdio --mode dual", () =>
    Effect.gen(function*() {
      yield* Effect.scoped(Effect.flatMap(startStdio("effect-ai-server.ts", []), modernOverStdio))
      yield* Effect.scoped(Effect.flatMap(startStdio("effect-ai-server.ts", ["--mode", "dual"]), legacyOverStdio))
    }), { timeout: 60_000 })
})
