/**
 * Faults on the stateless era's POSTs (2026-07-28), on a real loopback
 * server with `McpServer` (`stateless: true`) behind it: routing headers the
 * other tests leave out (prompts/get and resources/read names, boolean
 * parameters, malformed Base64 sentinels), requestState brought back by
 * someone else or too late, headers of the session era on a stateless
 * request, and clients that go away mid-handler. Every response object is
 * watched, so a write after its connection closed is counted.
 */
import * as http from "node:http"
import * as net from "node:net"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Context, Deferred, Effect, Layer, type Scope } from "effect"
import * as HttpRouter from "effect/http/HttpRouter"
import * as RequestMeta from "../../../src/RequestMeta.ts"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../../src/server/McpServer.ts"
import { Unauthorized } from "../../../src/server/HttpServerTransport.ts"
import { eventually, isClean, openSession, post, run } from "./helpers.ts"

const MODERN = "2026-07-28"

const tools = [
  {
    name: "flags",
    inputSchema: {
      type: "object",
      properties: {
        verbose: { type: "boolean", "x-mcp-header": "Verbose" },
        region: { type: "string", "x-mcp-header": "Region" },
        count: { type: "integer", "x-mcp-header": "Count" }
      }
    }
  },
  { name: "hang", inputSchema: { type: "object" } },
  { name: "late", inputSchema: { type: "object" } },
  { name: "counted", inputSchema: { type: "object" } }
]

const text = (t: string) => ({ content: [{ type: "text", text: t }] })

const NAME_FORM = {
  message: "Your name?",
  requestedSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] }
} as const

/** What the handlers report: how many run now, and the moments the tests wait for. */
interface Probe {
  active: number
  started: Deferred.Deferred<void>
  interrupted: Deferred.Deferred<void>
  /** Lets `late` finish the uninterruptible part it is waiting in. */
  release: Deferred.Deferred<void>
  finished: Deferred.Deferred<void>
}

const makeProbe = Effect.gen(function*() {
  return {
    active: 0,
    started: yield* Deferred.make<void>(),
    interrupted: yield* Deferred.make<void>(),
    release: yield* Deferred.make<void>(),
    finished: yield* Deferred.make<void>()
  } satisfies Probe
})

/** Counts the handler while it runs and reports its start, interruption and end. */
const tracked = <A, E, R>(probe: Probe, body: Effect.Effect<A, E, R>) =>
  Effect.suspend(() => {
    probe.active++
    return Effect.andThen(Deferred.succeed(probe.started, undefined), body)
  }).pipe(
    Effect.onInterrupt(() => Deferred.succeed(probe.interrupted, undefined)),
    Effect.ensuring(Effect.suspend(() => {
      probe.active--
      return Deferred.succeed(probe.finished, undefined)
    }))
  )

const makeServer = (probe: Probe, options: Partial<McpServer.McpServerOptions>) =>
  McpServer.make({
    serverInfo: { name: "faults", version: "1.0.0" },
    capabilities: { tools: {}, prompts: {}, resources: {} },
    stateless: true,
    ...options
  }).pipe(
    McpServer.method("tools/list", {}, () => Effect.succeed({ tools })),
    McpServer.method("tools/call", {}, (params, ctx) => {
      const p = params as { name: string; arguments?: Record<string, unknown> }
      switch (p.name) {
        case "flags":
          return Effect.succeed(text(`flags: ${JSON.stringify(p.arguments ?? {})}`))
        case "hang":
          return tracked(probe, Effect.andThen(ctx.progress(1), Effect.never))
        case "late":
          // Deaf to the interruption until released, then it streams and answers: all of it must be dropped.
          return tracked(
            probe,
            Effect.uninterruptible(
              Effect.andThen(Deferred.await(probe.release), Effect.andThen(ctx.progress(2), Effect.succeed(text("late"))))
            )
          )
        case "counted":
          return Effect.map(ctx.elicit(NAME_FORM), (answer) =>
            text(`counted ${String((answer as { content?: { name?: unknown } }).content?.name)}`))
        default:
          return Effect.succeed(text("?"))
      }
    }),
    McpServer.method("prompts/get", {}, (params) =>
      Effect.succeed({
        messages: [{ role: "user", content: { type: "text", text: `prompt ${(params as { name: string }).name}` } }]
      })),
    McpServer.method("resources/read", {}, (params) =>
      Effect.succeed({ contents: [{ uri: (params as { uri: string }).uri, text: "resource" }] }))
  )

/** Writes (headers or bytes) made on a response after its connection closed. */
interface Writes {
  late: number
  closed: number
}

const watchedServer = (writes: Writes) => {
  class WatchedResponse<Req extends http.IncomingMessage = http.IncomingMessage> extends http.ServerResponse<Req> {
    private gone = false
    constructor(req: Req) {
      super(req)
      this.once("close", () => {
        this.gone = true
        writes.closed++
      })
    }
    override writeHead(...args: Array<any>): this {
      if (this.gone) writes.late++
      return (super.writeHead as (...a: Array<any>) => this)(...args)
    }
    override write(chunk: any, ...rest: Array<any>): boolean {
      if (this.gone && chunk !== undefined && chunk.length > 0) writes.late++
      return (super.write as (...a: Array<any>) => boolean)(chunk, ...rest)
    }
    override end(chunk?: any, ...rest: Array<any>): this {
      if (this.gone && chunk !== undefined && typeof chunk !== "function" && chunk.length > 0) writes.late++
      return (super.end as (...a: Array<any>) => this)(chunk, ...rest)
    }
  }
  return http.createServer({ ServerResponse: WatchedResponse as typeof http.ServerResponse })
}

interface Running {
  readonly url: string
  readonly port: number
  readonly transport: HttpServerTransport.HttpServerTransportShape
  readonly handle: McpServer.ServerHandle<never>
  readonly probe: Probe
  readonly writes: Writes
}

const serveFaults = (
  options: HttpServerTransport.Options = {},
  serverOptions: Partial<McpServer.McpServerOptions> = {}
): Effect.Effect<Running, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const probe = yield* makeProbe
    const writes: Writes = { late: 0, closed: 0 }
    const handle = yield* McpServer.toHandler(makeServer(probe, serverOptions))
    const server = watchedServer(writes)
    const app = HttpRouter.serve(
      HttpServerTransport.routes(handle.handler, options),
      { disableLogger: true, disableListenLog: true }
    ).pipe(Layer.provideMerge(NodeHttpServer.layer(() => server, { host: "127.0.0.1", port: 0 })))
    const context = yield* Layer.build(app)
    // Runs first: keep-alive connections left by clients would hold the listener's close.
    yield* Effect.addFinalizer(() => Effect.sync(() => server.closeAllConnections()))
    const transport = Context.get(context, HttpServerTransport.HttpServerTransport)
    const port = (server.address() as net.AddressInfo).port
    return { url: `http://127.0.0.1:${port}/mcp`, port, transport, handle, probe, writes }
  })

const meta = () => RequestMeta.requestMeta({ protocolVersion: MODERN, clientCapabilities: { elicitation: { form: {} } } })

/** A well-formed modern POST: body, and the headers our client would send. */
const modern = (method: string, params: Record<string, unknown> = {}, id = 1) => {
  const full = { ...params, _meta: { ...meta(), ...(params._meta as object | undefined) } }
  return { body: { jsonrpc: "2.0", id, method, params: full }, headers: RequestMeta.standardHeaders(MODERN, method, full) }
}

interface Answer {
  readonly status: number
  readonly body: any
}

const answerOf = async (res: Response): Promise<Answer> => ({ status: res.status, body: await res.json() })

const ask = (url: string, m: { body: unknown; headers: Record<string, string> }, extra: Record<string, string> = {}) =>
  Effect.promise(() => post(url, m.body, { ...m.headers, ...extra }).then(answerOf))

const without = (headers: Record<string, string>, name: string) =>
  Object.fromEntries(Object.entries(headers).filter(([k]) => k !== name))

const idle = async (transport: HttpServerTransport.HttpServerTransportShape) => {
  const s = await run(transport.stats)
  return s.statelessRequests === 0 && s.openStreams === 0 && s.slotsInUse === 0 && s.bufferedBytes === 0 &&
    (await isClean(transport))
}

describe("stateless era faults: routing headers", () => {
  it.live("each header that disagrees with the body, or cannot be decoded, is 400 -32020 naming the header", () =>
    Effect.scoped(Effect.gen(function*() {
      const { url } = yield* serveFaults()
      const prompt = modern("prompts/get", { name: "greet" })
      const resource = modern("resources/read", { uri: "test://a b" })
      const flags = modern("tools/call", { name: "flags", arguments: { verbose: true, region: "eu", count: 7 } })
      const flagHeaders = { ...flags.headers, "mcp-param-verbose": "true", "mcp-param-region": "eu", "mcp-param-count": "7" }
      const flagged = { body: flags.body, headers: flagHeaders }
      const numericRegion = modern("tools/call", { name: "flags", arguments: { region: 5 } })

      // The well-formed ones pass, sentinel forms included.
      for (
        const [m, extra] of [
          [prompt, {}],
          [prompt, { "mcp-name": "=?base64?Z3JlZXQ=?=" }],
          [resource, {}],
          [resource, { "mcp-name": `=?base64?${Buffer.from("test://a b").toString("base64")}?=` }],
          [flagged, {}],
          [flagged, { "mcp-param-verbose": "=?base64?dHJ1ZQ==?=" }]
        ] as const
      ) {
        expect((yield* ask(url, m, extra)).status).toBe(200)
      }

      const cases: ReadonlyArray<readonly [string, { body: unknown; headers: Record<string, string> }, Record<string, string>, string]> = [
        ["prompts/get: another name", prompt, { "mcp-name": "other" }, "Mcp-Name"],
        ["resources/read: another uri", resource, { "mcp-name": "test://other" }, "Mcp-Name"],
        ["resources/read: a sentinel of another uri", resource, { "mcp-name": "=?base64?dGVzdDovL290aGVy?=" }, "Mcp-Name"],
        ["Mcp-Name: Base64 without its padding", prompt, { "mcp-name": "=?base64?Z3JlZXQ?=" }, "Mcp-Name"],
        ["Mcp-Name: Base64 of bytes that are not UTF-8", prompt, { "mcp-name": "=?base64?/w==?=" }, "Mcp-Name"],
        ["Mcp-Name: an empty sentinel", prompt, { "mcp-name": "=?base64??=" }, "Mcp-Name"],
        ["Mcp-Name: upper-case markers are no sentinel", prompt, { "mcp-name": "=?BASE64?Z3JlZXQ=?=" }, "Mcp-Name"],
        ["Mcp-Name: a leading space a sender must encode", prompt, { "mcp-name": "%20greet" }, "Mcp-Name"],
        ["Mcp-Method: another case", flagged, { "mcp-method": "Tools/Call" }, "Mcp-Method"],
        ["Mcp-Param-Verbose: the other boolean", flagged, { "mcp-param-verbose": "false" }, "Mcp-Param-Verbose"],
        ["Mcp-Param-Verbose: a boolean in capitals", flagged, { "mcp-param-verbose": "TRUE" }, "Mcp-Param-Verbose"],
        ["Mcp-Param-Count: not an integer", flagged, { "mcp-param-count": "7.5" }, "Mcp-Param-Count"],
        ["Mcp-Param-Count: hexadecimal", flagged, { "mcp-param-count": "0x7" }, "Mcp-Param-Count"],
        ["Mcp-Param-Region: a sentinel of invalid Base64", flagged, { "mcp-param-region": "=?base64?ZX=1?=" }, "Mcp-Param-Region"],
        ["Mcp-Param-Region: the argument is no string", numericRegion, { "mcp-param-region": "5" }, "Mcp-Param-Region"]
      ]
      for (const [name, m, extra, header] of cases) {
        const answer = yield* ask(url, m, extra)
        expect({ name, status: answer.status, id: answer.body.id, code: answer.body.error?.code, data: answer.body.error?.data })
          .toEqual({ name, status: 400, id: 1, code: -32020, data: { header } })
      }
      for (const [name, header] of [["Mcp-Name", "mcp-name"], ["Mcp-Param-Verbose", "mcp-param-verbose"]] as const) {
        const m = header === "mcp-name" ? prompt : flagged
        const answer = yield* Effect.promise(() => post(url, m.body, without(m.headers, header)).then(answerOf))
        expect({ status: answer.status, code: answer.body.error?.code, data: answer.body.error?.data })
          .toEqual({ status: 400, code: -32020, data: { header: name } })
      }
    })))
})

describe("stateless era faults: requestState over HTTP", () => {
  const answer = { "ask-0": { action: "accept", content: { name: "Bo" } } }

  it.live("a state is bound to the principal the authenticate hook names: another principal's replay is refused", () =>
    Effect.scoped(Effect.gen(function*() {
      const { url } = yield* serveFaults({
        authenticate: (request) => {
          const user = request.headers["x-user"]
          return user === undefined
            ? Effect.fail(new Unauthorized({ wwwAuthenticate: "Bearer" }))
            : Effect.succeed({ id: user })
        }
      })
      const first = yield* ask(url, modern("tools/call", { name: "counted" }), { "x-user": "alice" })
      expect(first.body.result.resultType).toBe("input_required")
      const retry = modern("tools/call", { name: "counted", requestState: first.body.result.requestState, inputResponses: answer }, 2)
      const stolen = yield* ask(url, retry, { "x-user": "mallory" })
      expect(stolen.body.error).toMatchObject({ code: -32602, message: expect.stringContaining("another principal") })
      const own = yield* ask(url, retry, { "x-user": "alice" })
      expect(own.body.result).toMatchObject({ resultType: "complete", content: [{ text: "counted Bo" }] })
    })))

  it.live("forged, issued for another tool or request, or expired: a -32602 error in the answer (HTTP 200, as any handler error)", () =>
    Effect.gen(function*() {
      // The server's clock, moved forward by the test to expire a state.
      let aheadMs = 0
      const real = yield* Clock.Clock
      const moved: Clock.Clock = {
        currentTimeMillisUnsafe: () => real.currentTimeMillisUnsafe() + aheadMs,
        currentTimeMillis: Effect.sync(() => real.currentTimeMillisUnsafe() + aheadMs),
        currentTimeNanosUnsafe: () => real.currentTimeNanosUnsafe() + BigInt(aheadMs) * 1_000_000n,
        currentTimeNanos: Effect.sync(() => real.currentTimeNanosUnsafe() + BigInt(aheadMs) * 1_000_000n),
        monotonicTimeNanosUnsafe: () => real.monotonicTimeNanosUnsafe(),
        monotonicTimeNanos: real.monotonicTimeNanos,
        sleep: (duration) => real.sleep(duration)
      }
      const { url } = yield* Effect.provideService(serveFaults({}, { requestStateTtl: "1 minute" }), Clock.Clock, moved)
      const first = yield* ask(url, modern("tools/call", { name: "counted", arguments: { x: 1 } }))
      const state = first.body.result.requestState as string
      const retry = (params: Record<string, unknown>) =>
        ask(url, modern("tools/call", { name: "counted", arguments: { x: 1 }, inputResponses: answer, ...params }, 2))
      const refused = (reason: string) => ({
        status: 200,
        body: { jsonrpc: "2.0", id: 2, error: { code: -32602, message: expect.stringContaining(reason) } }
      })

      expect(yield* retry({ requestState: "v1.eyJhIjp7fX0.AAAA" })).toMatchObject(refused("not issued by this server"))
      expect(yield* retry({ requestState: `${state.slice(0, -2)}AA` })).toMatchObject(refused("altered"))
      expect(yield* retry({ name: "flags", requestState: state })).toMatchObject(refused("another request"))
      expect(yield* retry({ arguments: { x: 2 }, requestState: state })).toMatchObject(refused("other arguments"))
      const otherMethod = yield* ask(url, modern("prompts/get", { name: "counted", requestState: state }, 3))
      expect(otherMethod.body.error).toMatchObject({ code: -32602, message: expect.stringContaining("another request") })
      expect((yield* retry({ requestState: state })).body.result.resultType).toBe("complete")
      aheadMs = 61_000
      expect(yield* retry({ requestState: state })).toMatchObject(refused("expired"))
    }).pipe(Effect.scoped))
})

describe("stateless era faults: headers of the session era", () => {
  it.live("Mcp-Session-Id of a live session and its Last-Event-ID are ignored: no replay, no echo, the session untouched", () =>
    Effect.scoped(Effect.gen(function*() {
      const { handle, transport, url } = yield* serveFaults()
      const sessionId = yield* Effect.promise(() => openSession(url))
      // An SSE answer in the session, for a real event id to send back.
      const listed = yield* Effect.promise(() =>
        post(url, { jsonrpc: "2.0", id: 5, method: "tools/list" }, {
          accept: "text/event-stream",
          "mcp-session-id": sessionId,
          "mcp-protocol-version": "2025-11-25"
        }).then((r) => r.text())
      )
      const eventId = /^id: (.+)$/m.exec(listed)?.[1]
      expect(eventId).toBeDefined()

      const m = modern("tools/call", { name: "flags", arguments: {} }, 9)
      for (
        const extra of [
          { "mcp-session-id": sessionId },
          { "last-event-id": eventId! },
          { "mcp-session-id": sessionId, "last-event-id": eventId! },
          { "mcp-session-id": "made-up", "last-event-id": "made-up" }
        ]
      ) {
        const res = yield* Effect.promise(() => post(url, m.body, { ...m.headers, ...extra }))
        expect(res.status).toBe(200)
        expect(res.headers.get("mcp-session-id")).toBeNull()
        const body = yield* Effect.promise(() => res.json())
        expect(body).toMatchObject({ id: 9, result: { resultType: "complete", content: [{ text: "flags: {}" }] } })
      }
      expect(yield* transport.sessionIds).toEqual([sessionId])
      expect((yield* handle.sessions).map((s) => [s.sessionId, s.era])).toEqual([[sessionId, "legacy"]])
    })))
})

describe("stateless era faults: the client goes away", () => {
  it.live("a JSON-only client closes mid-handler: the handler is interrupted, nothing is written, all is idle again", () =>
    Effect.scoped(Effect.gen(function*() {
      const { probe, transport, url, writes } = yield* serveFaults()
      const m = modern("tools/call", { name: "hang" })
      const controller = new AbortController()
      const pending = post(url, m.body, { ...m.headers, accept: "application/json" }, { signal: controller.signal })
        .catch(() => "aborted" as const)
      yield* Deferred.await(probe.started)
      controller.abort()
      expect(yield* Effect.promise(() => pending)).toBe("aborted")
      yield* Deferred.await(probe.interrupted)
      yield* Deferred.await(probe.finished)
      expect(probe.active).toBe(0)
      expect(yield* Effect.promise(() => eventually(() => idle(transport)))).toBe(true)
      expect(writes.late).toBe(0)
    })))

  it.live("a handler deaf to the interruption finishes late: its progress and result are dropped, not written", () =>
    Effect.scoped(Effect.gen(function*() {
      for (const accept of ["application/json, text/event-stream", "application/json"]) {
        const { probe, transport, url, writes } = yield* serveFaults()
        const m = modern("tools/call", { name: "late", _meta: { progressToken: "p" } })
        const controller = new AbortController()
        const pending = post(url, m.body, { ...m.headers, accept }, { signal: controller.signal }).catch(() => "aborted" as const)
        yield* Deferred.await(probe.started)
        controller.abort()
        expect(yield* Effect.promise(() => pending)).toBe("aborted")
        // The server saw the connection close before the handler answers.
        expect(yield* Effect.promise(() => eventually(() => writes.closed === 1))).toBe(true)
        yield* Deferred.succeed(probe.release, undefined)
        yield* Deferred.await(probe.finished)
        expect(yield* Effect.promise(() => eventually(() => idle(transport)))).toBe(true)
        expect(writes.late).toBe(0)
      }
    })))

  it.live("an SSE client closes after the first progress: the handler is interrupted, nothing is written afterwards", () =>
    Effect.scoped(Effect.gen(function*() {
      const { probe, transport, url, writes } = yield* serveFaults()
      const m = modern("tools/call", { name: "hang", _meta: { progressToken: "p" } })
      const controller = new AbortController()
      const res = yield* Effect.promise(() => post(url, m.body, m.headers, { signal: controller.signal }))
      expect(res.headers.get("content-type")).toContain("text/event-stream")
      const reader = res.body!.getReader()
      let seen = ""
      while (!seen.includes("notifications/progress")) {
        const chunk = yield* Effect.promise(() => reader.read())
        expect(chunk.done).toBe(false)
        seen += new TextDecoder().decode(chunk.value)
      }
      controller.abort()
      yield* Deferred.await(probe.interrupted)
      yield* Deferred.await(probe.finished)
      expect(probe.active).toBe(0)
      expect(yield* Effect.promise(() => eventually(() => idle(transport)))).toBe(true)
      expect(writes.late).toBe(0)
    })))

  it.live("a client that sends half its body and goes away: no handler runs, nothing is held", () =>
    Effect.scoped(Effect.gen(function*() {
      const { port, probe, transport } = yield* serveFaults()
      const m = modern("tools/call", { name: "hang" })
      const body = JSON.stringify(m.body)
      const head = [
        "POST /mcp HTTP/1.1",
        `host: 127.0.0.1:${port}`,
        "content-type: application/json",
        "accept: application/json, text/event-stream",
        `content-length: ${Buffer.byteLength(body)}`,
        ...Object.entries(m.headers).map(([k, v]) => `${k}: ${v}`),
        "",
        ""
      ].join("\r\n")
      yield* Effect.promise(() =>
        new Promise<void>((done, fail) => {
          const socket = net.connect(port, "127.0.0.1", () => {
            socket.write(head + body.slice(0, body.length >> 1), () => {
              socket.destroy()
              done()
            })
          })
          socket.on("error", fail)
        })
      )
      expect(yield* Effect.promise(() => eventually(() => idle(transport)))).toBe(true)
      expect(probe.active).toBe(0)
      expect(yield* Deferred.isDone(probe.started)).toBe(false)
    })))
})
