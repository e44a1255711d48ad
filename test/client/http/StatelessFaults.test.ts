/**
 * `McpClient` over Streamable HTTP in the stateless era, against a loopback
 * server scripted per test: what the era probe sends and when it falls back
 * to `initialize`, a header mismatch about `Mcp-Param-*` (refresh the tool
 * list, retry once), one that is not, a listen that is never acknowledged,
 * and an SSE answer that breaks before the response. Each fault ends in a
 * typed outcome and leaves nothing pending.
 */
import { describe, expect } from "@effect/vitest"
import { Effect, SubscriptionRef } from "effect"
import * as McpClient from "../../../src/client/McpClient.ts"
import * as Negotiation from "../../../src/client/Negotiation.ts"
import * as StreamableHttp from "../../../src/client/StreamableHttpClientTransport.ts"
import { discoverResult, MODERN } from "../../fixtures/modern-faults.ts"
import * as Server from "./MisbehavingServer.ts"
import { httpClients, liveWith } from "./httpClients.ts"

const isMethod = (method: string) => (r: Server.Received) => r.json?.method === method
const posts = (server: Server.MisbehavingServer, method?: string) =>
  server.received("POST").filter((r) => method === undefined || r.json?.method === method)

const complete = (result: Record<string, unknown>) => ({ resultType: "complete", ...result })
const plainTool = { name: "deploy", inputSchema: { type: "object", properties: { region: { type: "string" } } } }
const headerTool = {
  name: "deploy",
  inputSchema: { type: "object", properties: { region: { type: "string", "x-mcp-header": "Region" } } }
}

/** A stateless server: discovery, a tool list, and tool calls that echo their arguments. */
const modernServer = (tools: () => ReadonlyArray<unknown>): Server.Handler => (r) =>
  Effect.succeed(
    isMethod("server/discover")(r)
      ? Server.json(Server.result(r.json.id, discoverResult))
      : isMethod("tools/list")(r)
      ? Server.json(Server.result(r.json.id, complete({ tools: tools() })))
      : isMethod("tools/call")(r)
      ? Server.json(
        Server.result(r.json.id, complete({ content: [{ type: "text", text: JSON.stringify(r.json.params.arguments) }] }))
      )
      : undefined
  )

const connect = (server: Server.MisbehavingServer, options: McpClient.McpClientOptions) =>
  McpClient.connect(StreamableHttp.make({ url: server.url }), { eraCache: Negotiation.make(), ...options })

const mismatch = (id: unknown, message: string) =>
  Server.json({ jsonrpc: "2.0", id, error: { code: -32020, message } }, { status: 400 })

describe.each(httpClients)("McpClient over Streamable HTTP, stateless-era faults, via %s", (_name, clientLayer) => {
  const live = liveWith(clientLayer, 15_000)

  describe("the era probe", () => {
    /** Statuses whose non-JSON body means a server of the handshake era, and those that say nothing about the era. */
    const cases = [
      { status: 400, body: "Bad Request: No valid session ID provided", fallback: true },
      { status: 404, body: "<html>Not Found</html>", fallback: true },
      { status: 405, body: "", fallback: true },
      { status: 401, body: "Unauthorized", fallback: false },
      { status: 403, body: "Forbidden", fallback: false },
      { status: 500, body: "oops", fallback: false }
    ] as const

    for (const c of cases) {
      live(`auto, ${c.status} with a body that is not JSON: ${c.fallback ? "initialize follows" : "HttpError, no fallback"}`, () =>
        Effect.gen(function*() {
          const server = yield* Server.make
          yield* server.setHandler((r) =>
            Effect.succeed(isMethod("server/discover")(r) ? Server.status(c.status, c.body) : undefined)
          )
          const exit = yield* Effect.exit(connect(server, { protocol: "auto" }))
          const [probe, ...rest] = posts(server)
          expect(probe!.json.method).toBe("server/discover")
          expect(probe!.headers["mcp-protocol-version"]).toBe(MODERN)
          expect(probe!.headers["mcp-method"]).toBe("server/discover")
          expect(probe!.json.params._meta["io.modelcontextprotocol/protocolVersion"]).toBe(MODERN)
          if (c.fallback) {
            expect(exit._tag).toBe("Success")
            if (exit._tag === "Success") expect(exit.value.era).toBe("legacy")
            expect(rest.map((p) => p.json.method)).toEqual(["initialize", "notifications/initialized"])
            expect(rest[0]!.headers["mcp-method"]).toBeUndefined()
          } else {
            expect(exit._tag).toBe("Failure")
            if (exit._tag === "Failure") {
              const error = yield* Effect.flip(Effect.failCause(exit.cause))
              expect(error).toMatchObject({ _tag: "McpTransportError", reason: { _tag: "HttpError", status: c.status } })
            }
            expect(rest).toEqual([])
          }
        }))
    }

    live("pinned 2026-07-28, a 400 with a body that is not JSON is a typed HttpError: no initialize", () =>
      Effect.gen(function*() {
        const server = yield* Server.make
        yield* server.setHandler((r) =>
          Effect.succeed(isMethod("server/discover")(r) ? Server.status(400, "Bad Request: No valid session ID provided") : undefined)
        )
        const error = yield* Effect.flip(connect(server, { protocol: MODERN }))
        expect(error).toMatchObject({ _tag: "McpTransportError", reason: { _tag: "HttpError", status: 400 } })
        expect(posts(server).map((p) => p.json.method)).toEqual(["server/discover"])
        expect(posts(server)[0]!.headers["mcp-protocol-version"]).toBe(MODERN)
      }))

    for (const protocol of ["auto", MODERN] as const) {
      live(`${protocol}, the first request refused with 400 -32022 listing the version asked for: retried once with it`, () =>
        Effect.gen(function*() {
          const server = yield* Server.make
          const modern = modernServer(() => [plainTool])
          let refused = false
          yield* server.setHandler((r, s) => {
            if (refused || r.verb !== "POST") return modern(r, s)
            refused = true
            return Effect.succeed(Server.json({
              jsonrpc: "2.0",
              id: r.json.id,
              error: { code: -32022, message: "Unsupported protocol version", data: { supported: [MODERN], requested: MODERN } }
            }, { status: 400 }))
          })
          const client = yield* connect(server, { protocol })
          expect(client.era).toBe("modern")
          yield* client.listTools()
          const sent = posts(server)
          expect(sent.map((p) => [p.json.method, p.headers["mcp-protocol-version"], p.json.params._meta["io.modelcontextprotocol/protocolVersion"]]))
            .toEqual([["server/discover", MODERN, MODERN], ["server/discover", MODERN, MODERN], ["tools/list", MODERN, MODERN]])
          expect(sent[1]!.json.id).not.toEqual(sent[0]!.json.id)
        }))
    }

    live("auto, a discovery answer: the stateless era, and nothing but POSTs with the routing headers", () =>
      Effect.gen(function*() {
        const server = yield* Server.make
        yield* server.setHandler(modernServer(() => [plainTool]))
        const client = yield* connect(server, { protocol: "auto" })
        expect(client.era).toBe("modern")
        yield* client.listTools()
        expect(posts(server).map((p) => [p.json.method, p.headers["mcp-method"], p.headers["mcp-protocol-version"]]))
          .toEqual([["server/discover", "server/discover", MODERN], ["tools/list", "tools/list", MODERN]])
        expect(server.received("GET")).toEqual([])
      }))
  })

  describe("header mismatch", () => {
    live("-32020 about Mcp-Param: the tool list is read again and the call retried once, now with the header", () =>
      Effect.gen(function*() {
        const server = yield* Server.make
        let tools: ReadonlyArray<unknown> = [plainTool]
        const modern = modernServer(() => tools)
        yield* server.setHandler((r, s) =>
          isMethod("tools/call")(r) && r.headers["mcp-param-region"] !== r.json.params.arguments.region
            ? Effect.succeed(mismatch(r.json.id, "Mcp-Param-Region is missing or does not match the arguments"))
            : modern(r, s)
        )
        const client = yield* connect(server, { protocol: MODERN })
        yield* client.listTools()
        // The server now wants the region as a header; the client's list is stale.
        tools = [headerTool]
        const result = yield* client.callTool({ name: "deploy", arguments: { region: "eu-west" } })
        expect(result.content).toEqual([{ type: "text", text: JSON.stringify({ region: "eu-west" }) }])
        const calls = posts(server, "tools/call")
        expect(calls).toHaveLength(2)
        expect(calls[0]!.headers["mcp-param-region"]).toBeUndefined()
        expect(calls[1]!.headers["mcp-param-region"]).toBe("eu-west")
        expect(posts(server, "tools/list")).toHaveLength(2)
        expect(posts(server).map((p) => p.json.method).slice(-3)).toEqual(["tools/call", "tools/list", "tools/call"])
        expect(yield* client.connection.pendingCount).toBe(0)
      }))

    live("-32020 about Mcp-Param again after the retry: HeaderMismatch, one retry only", () =>
      Effect.gen(function*() {
        const server = yield* Server.make
        const modern = modernServer(() => [plainTool])
        yield* server.setHandler((r, s) =>
          isMethod("tools/call")(r) ? Effect.succeed(mismatch(r.json.id, "Mcp-Param-Region is missing")) : modern(r, s)
        )
        const client = yield* connect(server, { protocol: MODERN })
        const error = yield* Effect.flip(client.callTool({ name: "deploy", arguments: { region: "eu-west" } }))
        expect(error).toMatchObject({ _tag: "McpProtocolError", reason: { _tag: "HeaderMismatch" } })
        expect(posts(server, "tools/call")).toHaveLength(2)
        expect(yield* client.connection.pendingCount).toBe(0)
      }))

    live("headers that do not match the body (not Mcp-Param): HeaderMismatch at once, no refresh, no retry", () =>
      Effect.gen(function*() {
        const server = yield* Server.make
        const modern = modernServer(() => [plainTool])
        yield* server.setHandler((r, s) =>
          isMethod("tools/call")(r)
            ? Effect.succeed(mismatch(r.json.id, "Mcp-Name does not match params.name"))
            : modern(r, s)
        )
        const client = yield* connect(server, { protocol: MODERN })
        const error = yield* Effect.flip(client.callTool({ name: "deploy", arguments: { region: "eu-west" } }))
        expect(error).toMatchObject({ _tag: "McpProtocolError", reason: { _tag: "HeaderMismatch", method: "tools/call" } })
        expect(posts(server, "tools/call")).toHaveLength(1)
        expect(posts(server, "tools/list")).toHaveLength(0)
        expect(yield* client.connection.pendingCount).toBe(0)
      }))
  })

  live("a listen stream never acknowledged: Retrying with \"No acknowledgement\" once requestTimeout passed, its stream closed", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const modern = modernServer(() => [plainTool])
      yield* server.setHandler((r, s) =>
        isMethod("subscriptions/listen")(r) ? s.withhold("listen") : modern(r, s)
      )
      // The discovery and the listing below run under the same timeout as the listen: long enough for
      // them on a loaded machine, short enough that the listen's is soon over.
      const client = yield* connect(server, { protocol: MODERN, listen: true, requestTimeout: "1 second" })
      const state = yield* SubscriptionRef.get(client.subscription)
      expect(state._tag).toBe("Retrying")
      if (state._tag === "Retrying") expect(String(state.error)).toContain("No acknowledgement")
      yield* server.waitFor((e): e is Server.Abandoned => e._tag === "Abandoned" && e.label === "listen")
      const listen = posts(server, "subscriptions/listen")[0]!
      expect(listen.headers["mcp-method"]).toBe("subscriptions/listen")
      // The client still works while the listen waits for its next attempt.
      yield* client.listTools()
    }))

  live("an SSE answer that breaks before the response: NoResponse, nothing pending, and the same call succeeds again", () =>
    Effect.gen(function*() {
      const server = yield* Server.make
      const modern = modernServer(() => [plainTool])
      let first = true
      yield* server.setHandler((r, s) => {
        if (isMethod("tools/call")(r) && first) {
          first = false
          const progress = Server.notification("notifications/progress", { progressToken: 1, progress: 1 })
          return Effect.succeed(s.sse(Server.cutAfter([Server.event({ id: "e-1", retry: 10, data: progress })])))
        }
        return modern(r, s)
      })
      const client = yield* connect(server, { protocol: MODERN, requestTimeout: "1 minute" })
      const error = yield* Effect.flip(client.callTool({ name: "deploy", arguments: { region: "x" } }))
      expect(error).toMatchObject({ _tag: "McpTransportError", reason: { _tag: "NoResponse", method: "tools/call" } })
      expect(yield* client.connection.pendingCount).toBe(0)
      const again = yield* client.callTool({ name: "deploy", arguments: { region: "x" } })
      expect(again.content).toHaveLength(1)
      expect(server.received("GET")).toEqual([])
      expect(server.received().every((r) => r.headers["last-event-id"] === undefined)).toBe(true)
    }))
})
