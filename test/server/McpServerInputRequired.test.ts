/**
 * A handler's asks of the client (elicitation, sampling, roots) in both eras:
 * `input_required` results and retries in the stateless era, requests to the
 * client in a handshake-era session, from one definition.
 */
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Client as Sdk2Client } from "@modelcontextprotocol/client"
import { StdioClientTransport as Sdk2StdioClientTransport } from "@modelcontextprotocol/client/stdio"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import * as RequestMeta from "../../src/RequestMeta.ts"
import { DefinitionError } from "../../src/server/DefinitionError.ts"
import type { Handler } from "../../src/server/Handler.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import * as RequestStateKey from "../../src/server/RequestStateKey.ts"
import { makeAskingServer } from "../fixtures/asking-server.ts"
import { hasSpecSchema, specValidator } from "../fixtures/spec-schema.ts"

const handlers = {
  elicit: () => Effect.succeed({ action: "accept", content: { name: "Ada", topic: "engines" } } as const),
  createMessage: (params: { readonly messages: ReadonlyArray<{ readonly content: unknown }> }) =>
    Effect.succeed({
      role: "assistant",
      model: "test",
      content: { type: "text", text: `Hello! (${(params.messages[0]!.content as { text: string }).text})` }
    } as const),
  listRoots: () => Effect.succeed([{ uri: "file:///a" }, { uri: "file:///b" }])
}

/** Signing keys of the 32 bytes a key needs at least. */
const SHARED_KEY = "shared signing key, 32 bytes or more"
const ANOTHER_KEY = "another signing key, 32 bytes too"

const ALL_CAPS = { elicitation: { form: {} }, sampling: {}, roots: {} }

const meta = (clientCapabilities: Record<string, unknown> = ALL_CAPS) =>
  RequestMeta.requestMeta({ protocolVersion: "2026-07-28", clientCapabilities })

const textOf = (result: { readonly content: ReadonlyArray<unknown> }) => (result.content[0] as { text: string }).text

const checkSpec = (definition: string, value: unknown) => {
  if (!hasSpecSchema("2026-07-28")) return
  expect(specValidator("2026-07-28", definition)(value)).toBeUndefined()
}

type Frame = Record<string, any>

/** An in-memory pair on the asking server; every frame in either direction recorded, parsed. */
const pairOf = (options: Partial<McpServer.McpServerOptions> = {}, wrap: (h: Handler) => Handler = (h) => h) =>
  Effect.gen(function*() {
    const { server, runs } = makeAskingServer(options)
    const handle = yield* McpServer.toHandler(server)
    const sent: Array<Frame> = []
    const received: Array<Frame> = []
    const pair = yield* InMemoryTransport.makePair(wrap(handle.handler), {
      interceptor: {
        transmit: (direction, text, deliver) => {
          ;(direction === "server-to-client" ? received : sent).push(JSON.parse(text))
          return deliver(text)
        }
      }
    })
    return { handle, pair, runs, sent, received }
  })

type Raw = { request: (method: string, params: unknown) => Effect.Effect<unknown, unknown> }

/** One raw round of tools/call, returning its result. */
const round = (client: Raw, params: Record<string, unknown>) =>
  Effect.map(client.request("tools/call", { _meta: meta(), ...params }), (r) => r as Frame)

const errorOf = (client: Raw, method: string, params: Record<string, unknown>) =>
  Effect.map(Effect.flip(client.request(method, { _meta: meta(), ...params })), (e) => e as { code: number; rpcMessage: string })

describe("asks in the stateless era: input_required", () => {
  it.effect("our client (2026-07-28 and auto): a tool that elicits, samples and lists roots is one call of three input rounds", () =>
    Effect.gen(function*() {
      for (const protocol of ["2026-07-28", "auto"] as const) {
        const { handle, pair, runs, sent, received } = yield* pairOf()
        const client = yield* McpClient.fromTransport(pair.client, { protocol, listen: false, handlers })
        expect(client.era).toBe("modern")
        const result = yield* client.callTool({ name: "onboard" })
        expect(textOf(result)).toBe("Hello! (Greet Ada) [file:///a, file:///b]")

        const calls = sent.filter((m) => m.method === "tools/call")
        expect(calls).toHaveLength(4)
        expect(new Set(calls.map((c) => c.id)).size).toBe(4)
        const rounds = received.filter((m) => m.result?.resultType === "input_required").map((m) => m.result)
        expect(rounds.map((r) => Object.entries(r.inputRequests).map(([k, v]) => [k, (v as Frame).method]))).toEqual([
          [["ask-0", "elicitation/create"]],
          [["ask-1", "sampling/createMessage"]],
          [["ask-2", "roots/list"]]
        ])
        for (const r of rounds) checkSpec("InputRequiredResult", r)
        // Each retry echoes the last state and answers exactly what was asked.
        for (const [i, call] of calls.slice(1).entries()) {
          expect(call.params.requestState).toBe(rounds[i].requestState)
          expect(Object.keys(call.params.inputResponses)).toEqual(Object.keys(rounds[i].inputRequests))
        }
        // The handler ran from the start on every round; nothing was kept between them.
        expect(runs.onboard).toBe(4)
        expect(yield* handle.sessions).toEqual([])
      }
    }))

  it.effect("a side effect before the ask runs once per round (the documented model)", () =>
    Effect.gen(function*() {
      const { pair, runs } = yield* pairOf()
      const client = yield* McpClient.fromTransport(pair.client, { protocol: "2026-07-28", listen: false, handlers })
      expect(textOf(yield* client.callTool({ name: "counted" }))).toBe("counted Ada")
      expect(runs.counted).toBe(2)
    }))

  it.effect("asks made at once are asked in one round; prompts/get and resources/read ask too", () =>
    Effect.gen(function*() {
      const { pair, received } = yield* pairOf()
      const client = yield* McpClient.fromTransport(pair.client, { protocol: "2026-07-28", listen: false, handlers })
      expect(textOf(yield* client.callTool({ name: "together" }))).toBe("Ada with 2 roots")
      const first = received.find((m) => m.result?.resultType === "input_required")!.result
      expect(Object.keys(first.inputRequests).sort()).toEqual(["ask-0", "ask-1"])
      const prompt = yield* client.getPrompt({ name: "interview" })
      expect((prompt.messages[0]!.content as { text: string }).text).toBe("Tell me about engines")
      const read = yield* client.readResource("asking://roots")
      expect((read.contents[0] as { text: string }).text).toBe("file:///a\nfile:///b")
    }))

  it.effect("answers to keys not asked are ignored; a missing answer is asked again", () =>
    Effect.gen(function*() {
      const { pair } = yield* pairOf()
      const first = yield* round(pair.client, { name: "counted", inputResponses: { "ask-9": { action: "decline" } } })
      // An answer to a key the handler does not ask is no answer: the ask is made.
      expect(first.resultType).toBe("input_required")
      const again = yield* round(pair.client, {
        name: "counted",
        requestState: first.requestState,
        inputResponses: { other: { action: "accept", content: { name: "Eve" } } }
      })
      expect(again.inputRequests).toEqual(first.inputRequests)
      const done = yield* round(pair.client, {
        name: "counted",
        requestState: again.requestState,
        inputResponses: { "ask-0": { action: "accept", content: { name: "Bo" } } }
      })
      expect(done).toMatchObject({ resultType: "complete", content: [{ text: "counted Bo" }] })
    }))

  it.effect("a call without requestState takes its inputResponses as the answers (a retry of a server that issues no state)", () =>
    Effect.gen(function*() {
      const { pair, runs } = yield* pairOf()
      const done = yield* round(pair.client, {
        name: "counted",
        inputResponses: { "ask-0": { action: "accept", content: { name: "Bo" } }, extra: { action: "accept", content: {} } }
      })
      expect(done).toMatchObject({ resultType: "complete", content: [{ text: "counted Bo" }] })
      expect(runs.counted).toBe(1)
      // Answers given ahead carry on in the state with the next ask; keys the run did not use do not.
      const partial = yield* round(pair.client, {
        name: "onboard",
        inputResponses: { "ask-0": { action: "accept", content: { name: "Bo" } }, extra: { action: "decline" } }
      })
      expect(Object.keys(partial.inputRequests)).toEqual(["ask-1"])
      const next = yield* round(pair.client, {
        name: "onboard",
        requestState: partial.requestState,
        inputResponses: { "ask-1": { role: "assistant", model: "m", content: { type: "text", text: "Hi" } } }
      })
      expect(next.inputRequests["ask-2"]).toMatchObject({ method: "roots/list" })
      const nothingKept = yield* round(pair.client, {
        name: "onboard",
        requestState: next.requestState,
        inputResponses: { "ask-2": { roots: [] }, extra: { action: "accept", content: {} } }
      })
      expect(nothingKept).toMatchObject({ resultType: "complete", content: [{ text: "Hi []" }] })
    }))

  it.effect("an answer that is not a result of the method asked is -32602 naming its key, with or without a state", () =>
    Effect.gen(function*() {
      const { pair } = yield* pairOf()
      const bare = yield* errorOf(pair.client, "tools/call", { name: "counted", inputResponses: { "ask-0": 12345 } })
      expect(bare).toMatchObject({
        code: -32602,
        rpcMessage: "Invalid inputResponses: the answer to \"ask-0\" is not a elicitation/create result",
        data: { key: "ask-0" }
      })
      const first = yield* round(pair.client, { name: "onboard" })
      const second = yield* round(pair.client, {
        name: "onboard",
        requestState: first.requestState,
        inputResponses: { "ask-0": { action: "accept", content: { name: "Bo" } } }
      })
      const wrong = yield* errorOf(pair.client, "tools/call", {
        name: "onboard",
        requestState: second.requestState,
        inputResponses: { "ask-1": { action: "accept" } }
      })
      expect(wrong).toMatchObject({ code: -32602, data: { key: "ask-1" } })
      // Null answers are no answers at all: the ask is made again.
      expect((yield* round(pair.client, { name: "counted", inputResponses: null })).resultType).toBe("input_required")
    }))

  it.effect("inputKey names an ask's key; the unnamed asks keep their positions; a key used twice is a defect", () =>
    Effect.gen(function*() {
      const form = { message: "?", requestedSchema: { type: "object" as const, properties: {} } }
      const server = McpServer.make({ serverInfo: { name: "named", version: "1.0.0" }, stateless: true }).pipe(
        McpServer.method("tools/call", {}, (params, ctx) =>
          Effect.gen(function*() {
            if ((params as { name: string }).name === "twice") {
              yield* McpServer.inputKey("same")(ctx.elicit(form))
              yield* McpServer.inputKey("same")(ctx.listRoots)
            }
            const first = yield* ctx.elicit(form).pipe(McpServer.inputKey("user_name"))
            const [roots] = yield* Effect.all([ctx.listRoots, McpServer.inputKey("step2")(ctx.elicit(form))], {
              concurrency: "unbounded"
            })
            return { content: [{ type: "text", text: `${first.action} ${roots.length}` }] }
          }))
      )
      const handle = yield* McpServer.toHandler(server)
      const pair = yield* InMemoryTransport.makePair(handle.handler)
      const first = yield* round(pair.client, { name: "named" })
      expect(Object.keys(first.inputRequests)).toEqual(["user_name"])
      const second = yield* round(pair.client, {
        name: "named",
        requestState: first.requestState,
        inputResponses: { user_name: { action: "decline" } }
      })
      expect(Object.keys(second.inputRequests).sort()).toEqual(["ask-0", "step2"])
      const done = yield* round(pair.client, {
        name: "named",
        requestState: second.requestState,
        inputResponses: { "ask-0": { roots: [{ uri: "file:///a" }] }, step2: { action: "cancel" } }
      })
      expect(done.content).toEqual([{ type: "text", text: "decline 1" }])
      const twice = yield* errorOf(pair.client, "tools/call", { name: "twice", inputResponses: { same: { action: "decline" } } })
      expect(twice.code).toBe(-32603)
    }))

  it.effect("a forged, tampered, replayed (other tool, other arguments), expired or oversized requestState is -32602", () =>
    Effect.gen(function*() {
      const { pair } = yield* pairOf()
      const first = yield* round(pair.client, { name: "counted", arguments: { x: 1 } })
      const state = first.requestState as string
      const answer = { "ask-0": { action: "accept", content: { name: "Bo" } } }
      const retry = (params: Record<string, unknown>) =>
        errorOf(pair.client, "tools/call", { name: "counted", arguments: { x: 1 }, inputResponses: answer, ...params })

      const forged = yield* retry({ requestState: "v1.eyJhIjp7fX0.AAAA" })
      expect(forged.code).toBe(-32602)
      expect(forged.rpcMessage).toMatch(/^Invalid requestState: /)
      const flipped = state.slice(0, 10) + (state[10] === "A" ? "B" : "A") + state.slice(11)
      expect((yield* retry({ requestState: flipped })).code).toBe(-32602)
      const otherTool = yield* errorOf(pair.client, "tools/call", { name: "onboard", requestState: state, inputResponses: answer })
      expect(otherTool).toMatchObject({ code: -32602, rpcMessage: expect.stringContaining("another request") })
      expect((yield* retry({ arguments: { x: 2 }, requestState: state })).rpcMessage).toContain("other arguments")
      const otherMethod = yield* errorOf(pair.client, "prompts/get", { name: "counted", requestState: state })
      expect(otherMethod.code).toBe(-32602)
      expect((yield* retry({ requestState: 42 })).code).toBe(-32602)
      expect((yield* retry({ requestState: "x".repeat(McpServer.DEFAULT_REQUEST_STATE_MAX_BYTES + 1) })).rpcMessage)
        .toContain("larger than")

      // Still good before it expires, refused after.
      yield* TestClock.adjust("9 minutes")
      const fresh = yield* round(pair.client, { name: "counted", arguments: { x: 1 }, requestState: state, inputResponses: answer })
      expect(fresh.resultType).toBe("complete")
      yield* TestClock.adjust("2 minutes")
      expect((yield* retry({ requestState: state })).rpcMessage).toContain("expired")
    }))

  it.effect("answers that would outgrow requestStateMaxBytes end the call with -32603 instead of a state the server would refuse", () =>
    Effect.gen(function*() {
      const { pair } = yield* pairOf({ requestStateMaxBytes: 400 })
      const first = yield* round(pair.client, { name: "onboard" })
      expect(first.requestState.length).toBeLessThanOrEqual(400)
      const outgrown = yield* errorOf(pair.client, "tools/call", {
        name: "onboard",
        requestState: first.requestState,
        inputResponses: { "ask-0": { action: "accept", content: { name: "x".repeat(1_000) } } }
      })
      expect(outgrown).toMatchObject({ code: -32603, rpcMessage: expect.stringContaining("400 bytes") })
    }))

  it.effect("a state is signed with the server's key: another key refuses it, a shared key accepts it", () =>
    Effect.gen(function*() {
      const a = yield* pairOf({ requestStateKey: SHARED_KEY })
      const b = yield* pairOf({ requestStateKey: SHARED_KEY })
      const c = yield* pairOf({ requestStateKey: ANOTHER_KEY })
      const first = yield* round(a.pair.client, { name: "counted" })
      const retry = { name: "counted", requestState: first.requestState, inputResponses: { "ask-0": { action: "accept", content: { name: "Bo" } } } }
      expect((yield* round(b.pair.client, retry)).resultType).toBe("complete")
      expect((yield* errorOf(c.pair.client, "tools/call", retry)).code).toBe(-32602)
    }))

  it.effect("a state is bound to the principal the transport names", () =>
    Effect.gen(function*() {
      let principal = "alice"
      const withPrincipal = (h: Handler): Handler => (message, ctx) =>
        h(message, new Proxy(ctx, { get: (t, k) => k === "principal" ? principal : Reflect.get(t, k, t) }))
      const { pair } = yield* pairOf({}, withPrincipal)
      const first = yield* round(pair.client, { name: "counted" })
      principal = "mallory"
      const stolen = yield* errorOf(pair.client, "tools/call", { name: "counted", requestState: first.requestState })
      expect(stolen).toMatchObject({ code: -32602, rpcMessage: expect.stringContaining("another principal") })
    }))

  it.effect("an ask the request's capabilities lack is -32021 with requiredCapabilities, per request", () =>
    Effect.gen(function*() {
      const { pair } = yield* pairOf()
      const first = yield* round(pair.client, { name: "onboard" })
      const refused = yield* errorOf(pair.client, "tools/call", {
        name: "onboard",
        _meta: meta({ elicitation: { form: {} } }),
        requestState: first.requestState,
        inputResponses: { "ask-0": { action: "accept", content: { name: "Bo" } } }
      })
      expect(refused).toMatchObject({ code: -32021, data: { requiredCapabilities: { sampling: {} } } })
    }))

  it.effect("the same definition in a handshake-era session asks with requests to the client", () =>
    Effect.gen(function*() {
      const { pair, runs, received } = yield* pairOf()
      const client = yield* McpClient.fromTransport(pair.client, { protocol: "2025-11-25", handlers })
      expect(client.era).toBe("legacy")
      expect(textOf(yield* client.callTool({ name: "onboard" }))).toBe("Hello! (Greet Ada) [file:///a, file:///b]")
      expect(runs.onboard).toBe(1)
      expect(received.filter((m) => "method" in m && "id" in m).map((m) => m.method)).toEqual([
        "elicitation/create",
        "sampling/createMessage",
        "roots/list"
      ])
    }))
})

describe("requestState signing keys", () => {
  const refusal = (options: Partial<McpServer.McpServerOptions>) => {
    try {
      McpServer.make({ serverInfo: { name: "keys", version: "1.0.0" }, ...options })
      return undefined
    } catch (e) {
      return e instanceof DefinitionError ? { kind: e.kind, name: e.name, message: e.message } : e
    }
  }

  it.effect("a key shorter than 32 bytes, an empty list or both options at once are refused when the server is defined", () =>
    Effect.sync(() => {
      for (const key of ["", "a", "x".repeat(31), new Uint8Array(31), "\u00e9".repeat(15)]) {
        expect(refusal({ requestStateKey: key })).toMatchObject({
          kind: "option",
          name: "requestStateKey",
          message: expect.stringContaining("at least 32")
        })
      }
      expect(refusal({ requestStateKeys: [SHARED_KEY, "a"] })).toMatchObject({ kind: "option", name: "requestStateKeys[1]" })
      expect(refusal({ requestStateKeys: [] })).toMatchObject({ kind: "option", name: "requestStateKeys" })
      expect(refusal({ requestStateKey: SHARED_KEY, requestStateKeys: [SHARED_KEY] })).toMatchObject({
        kind: "option",
        name: "requestStateKey"
      })
      // 32 bytes, counted in UTF-8: sixteen two-byte characters are enough.
      for (const key of ["x".repeat(32), new Uint8Array(32), "\u00e9".repeat(16)]) {
        expect(refusal({ requestStateKey: key })).toBeUndefined()
      }
      expect(refusal({ requestStateKeys: [SHARED_KEY, ANOTHER_KEY] })).toBeUndefined()
    }))

  it.effect("rotation: the first key signs, every listed key is accepted, a key no longer listed is refused", () =>
    Effect.gen(function*() {
      const retryOf = (state: string) => ({
        name: "counted",
        requestState: state,
        inputResponses: { "ask-0": { action: "accept", content: { name: "Bo" } } }
      })
      const before = yield* pairOf({ requestStateKey: ANOTHER_KEY })
      // Two servers after the rotation, sharing the key list: the new key first, the old one still accepted.
      const rotatedA = yield* pairOf({ requestStateKeys: [SHARED_KEY, ANOTHER_KEY] })
      const rotatedB = yield* pairOf({ requestStateKeys: [SHARED_KEY, ANOTHER_KEY] })
      // The old key dropped from the list.
      const retired = yield* pairOf({ requestStateKeys: [SHARED_KEY] })

      const old = (yield* round(before.pair.client, { name: "counted" })).requestState as string
      expect((yield* round(rotatedA.pair.client, retryOf(old))).resultType).toBe("complete")
      expect(yield* errorOf(retired.pair.client, "tools/call", retryOf(old))).toMatchObject({
        code: -32602,
        rpcMessage: expect.stringContaining("not issued by this server")
      })

      // Each rotated server accepts the other's states, and signs with the new key (the old server refuses them).
      const fromA = (yield* round(rotatedA.pair.client, { name: "counted" })).requestState as string
      const fromB = (yield* round(rotatedB.pair.client, { name: "counted" })).requestState as string
      expect((yield* round(rotatedB.pair.client, retryOf(fromA))).resultType).toBe("complete")
      expect((yield* round(rotatedA.pair.client, retryOf(fromB))).resultType).toBe("complete")
      expect((yield* round(retired.pair.client, retryOf(fromA))).resultType).toBe("complete")
      expect((yield* errorOf(before.pair.client, "tools/call", retryOf(fromA))).code).toBe(-32602)
    }))
})

describe("the RequestStateKey reference", () => {
  const retryOf = (state: string) => ({
    name: "counted",
    requestState: state,
    inputResponses: { "ask-0": { action: "accept", content: { name: "Bo" } } }
  })

  it.effect("two servers given the same reference (no option) accept each other's states; one on the process default refuses them", () =>
    Effect.gen(function*() {
      const shared = RequestStateKey.layer(SHARED_KEY)
      const a = yield* Effect.provide(pairOf(), shared)
      const b = yield* Effect.provide(pairOf(), shared)
      const onDefault = yield* pairOf()
      const fromA = (yield* round(a.pair.client, { name: "counted" })).requestState as string
      expect((yield* round(b.pair.client, retryOf(fromA))).resultType).toBe("complete")
      expect(yield* errorOf(onDefault.pair.client, "tools/call", retryOf(fromA))).toMatchObject({
        code: -32602,
        rpcMessage: expect.stringContaining("not issued by this server")
      })
      // The option still wins over the reference.
      const byOption = yield* Effect.provide(pairOf({ requestStateKey: ANOTHER_KEY }), shared)
      expect((yield* errorOf(byOption.pair.client, "tools/call", retryOf(fromA))).code).toBe(-32602)
    }))

  it.effect("with nothing provided, every handle in the process signs with the same random key", () =>
    Effect.gen(function*() {
      const a = yield* pairOf()
      const b = yield* pairOf()
      const fromA = (yield* round(a.pair.client, { name: "counted" })).requestState as string
      expect((yield* round(b.pair.client, retryOf(fromA))).resultType).toBe("complete")
    }))

  it.effect("rotation through the reference: the first key signs, the others are accepted", () =>
    Effect.gen(function*() {
      const old = yield* Effect.provide(pairOf(), RequestStateKey.layer(ANOTHER_KEY))
      const rotated = yield* Effect.provide(pairOf(), RequestStateKey.layer([SHARED_KEY, ANOTHER_KEY]))
      const fromOld = (yield* round(old.pair.client, { name: "counted" })).requestState as string
      expect((yield* round(rotated.pair.client, retryOf(fromOld))).resultType).toBe("complete")
      const fromRotated = (yield* round(rotated.pair.client, { name: "counted" })).requestState as string
      expect((yield* errorOf(old.pair.client, "tools/call", retryOf(fromRotated))).code).toBe(-32602)
    }))

  it.effect("a short key or an empty list is refused, through make and when provided directly", () =>
    Effect.gen(function*() {
      const thrown = (f: () => unknown) => {
        try {
          f()
          return undefined
        } catch (e) {
          return e instanceof DefinitionError ? { kind: e.kind, name: e.name } : e
        }
      }
      expect(thrown(() => RequestStateKey.make("short"))).toEqual({ kind: "option", name: "requestStateKey" })
      expect(thrown(() => RequestStateKey.make([]))).toEqual({ kind: "option", name: "requestStateKeys" })
      const direct = yield* Effect.exit(Effect.provideService(pairOf(), RequestStateKey.RequestStateKey, [new Uint8Array(8)]))
      expect(direct._tag).toBe("Failure")
      expect(String(direct)).toContain("RequestStateKey[0]")
    }))
})

describe("asks in the stateless era over stdio", () => {
  const fixture = fileURLToPath(new URL("../fixtures/asking-server.ts", import.meta.url))

  it.live("our client (2026-07-28 and auto) against a stdio child: one call, three rounds, the handler ran four times", () =>
    Effect.gen(function*() {
      for (const protocol of ["2026-07-28", "auto"] as const) {
        const client = yield* McpClient.connect(
          StdioClientTransport.make({ command: process.execPath, args: [fixture, "--key", SHARED_KEY] }),
          // A child still loading on a busy machine is not a server that ignores the probe.
          { protocol, handlers, listen: false, probeTimeout: "60 seconds" }
        )
        expect(client.era).toBe("modern")
        expect(textOf(yield* client.callTool({ name: "onboard" }))).toBe("Hello! (Greet Ada) [file:///a, file:///b]")
        expect(JSON.parse(textOf(yield* client.callTool({ name: "runs" })))).toEqual({ onboard: 4 })
      }
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)), 90_000)
  it.live("the SDK v2 client pinned to 2026-07-28 answers the same rounds with its own handlers", () =>
    Effect.promise(async () => {
      const client = new Sdk2Client({ name: "sdk2", version: "1.0.0" }, {
        capabilities: { elicitation: { form: {} }, sampling: {}, roots: {} },
        versionNegotiation: { mode: { pin: "2026-07-28" } }
      })
      client.setRequestHandler("elicitation/create", async () => ({ action: "accept", content: { name: "Grace" } }))
      client.setRequestHandler("sampling/createMessage", async (request) => ({
        role: "assistant",
        model: "test",
        content: { type: "text", text: `Hi! (${(request.params.messages[0]!.content as { text: string }).text})` }
      }))
      client.setRequestHandler("roots/list", async () => ({ roots: [{ uri: "file:///r" }] }))
      await client.connect(new Sdk2StdioClientTransport({ command: process.execPath, args: [fixture], stderr: "pipe" }))
      try {
        const result = await client.callTool({ name: "onboard" })
        expect((result.content as Array<{ text: string }>)[0]!.text).toBe("Hi! (Greet Grace) [file:///r]")
        const runs = await client.callTool({ name: "runs" })
        expect(JSON.parse((runs.content as Array<{ text: string }>)[0]!.text)).toEqual({ onboard: 4 })
      } finally {
        await client.close()
      }
    }), 90_000) // the SDK's stdio transport starts the child more than once on a busy machine
})
