/**
 * One routing decision per POST from the `MCP-Protocol-Version` header and
 * the body's `_meta` together, on a real loopback server with `McpServer`
 * (`stateless: true`) behind it: a body of the stateless era under a header
 * of the session era (or the reverse) is refused 400 / -32020 on every
 * route, session or not, so what a gateway judged from the headers is what
 * runs. And routing headers sent on more than one line are refused, since
 * Node joins them into `"a, b"` where an intermediary reading the first
 * line sees `a`.
 */
import * as http from "node:http"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as RequestMeta from "../../../src/RequestMeta.ts"
import type * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../../src/server/McpServer.ts"
import { openSession, openSse, post, serve } from "./helpers.ts"

const MODERN = "2026-07-28"
const SESSION_ERA = "2025-11-25"

const tools = [
  { name: "harmless", inputSchema: { type: "object" } },
  {
    name: "transfer",
    inputSchema: { type: "object", properties: { acct: { type: "string", "x-mcp-header": "Acct" } } }
  }
]

/** What ran: every `tools/call` the handler served, with its arguments. */
type Ran = Array<{ readonly name: string; readonly arguments: unknown }>

const makeServer = (ran: Ran, options: Partial<McpServer.McpServerOptions> = {}) =>
  McpServer.make({ serverInfo: { name: "era-routing", version: "1.0.0" }, capabilities: { tools: {} }, stateless: true, ...options })
    .pipe(
      McpServer.method("tools/list", {}, () => Effect.succeed({ tools })),
      McpServer.method("tools/call", {}, (params) =>
        Effect.sync(() => {
          const p = params as { name: string; arguments?: unknown }
          ran.push({ name: p.name, arguments: p.arguments })
          return { content: [{ type: "text", text: `${p.name} done` }] }
        }))
    )

const serveEra = (options: HttpServerTransport.Options = {}, serverOptions: Partial<McpServer.McpServerOptions> = {}) =>
  Effect.gen(function*() {
    const ran: Ran = []
    const handle = yield* McpServer.toHandler(makeServer(ran, serverOptions))
    const server = yield* serve(options, () => handle.handler)
    return { ...server, ran }
  })

const meta = (protocolVersion = MODERN) => RequestMeta.requestMeta({ protocolVersion, clientCapabilities: {} })

/** The call the body really makes: `transfer` from the victim's account, in the stateless era. */
const transferBody = (id: number, _meta: Record<string, unknown> | null = meta()) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name: "transfer", arguments: { acct: "victim" }, ...(_meta === null ? {} : { _meta }) }
})

/** What a gateway reading the headers sees: a harmless `tools/list` for the attacker's account. */
const disguise = {
  "mcp-method": "tools/list",
  "mcp-name": "harmless",
  "mcp-param-acct": "attacker"
}

/** The headers our client sends for a body, stateless era. */
const honestHeaders = (body: { method: string; params: unknown }) => ({
  ...RequestMeta.standardHeaders(MODERN, body.method, body.params),
  "mcp-param-acct": "victim"
})

const answerOf = (res: Response) =>
  Effect.promise(async () => {
    const text = await res.text()
    return { status: res.status, body: text === "" ? undefined : JSON.parse(text) }
  })

const send = (url: string, body: unknown, headers: Record<string, string>) =>
  Effect.flatMap(Effect.promise(() => post(url, body, headers)), answerOf)

const mismatch = (id: number | null) => ({
  status: 400,
  body: { jsonrpc: "2.0", id, error: { code: -32020, data: { header: "MCP-Protocol-Version" } } }
})

describe("era routing: header and _meta decide together", () => {
  it.live("a stateless-era body under a session-era header on a live session is refused 400 / -32020, as on the stateless route", () =>
    Effect.scoped(Effect.gen(function*() {
      const { ran, url } = yield* serveEra()
      const sessionId = yield* Effect.promise(() => openSession(url, SESSION_ERA))

      const inSession = yield* send(url, transferBody(2), {
        "mcp-session-id": sessionId,
        "mcp-protocol-version": SESSION_ERA,
        ...disguise
      })
      expect(inSession).toMatchObject(mismatch(2))
      expect(inSession.body.result).toBeUndefined()

      // The same disguise under the stateless era's header: refused on the headers it lies in.
      const stateless = yield* send(url, transferBody(3), { "mcp-protocol-version": MODERN, ...disguise })
      expect(stateless).toMatchObject({ status: 400, body: { id: 3, error: { code: -32020, data: { header: "Mcp-Method" } } } })
      expect(ran).toEqual([])

      // The session itself is untouched: its own requests are served as before.
      const own = yield* send(url, { jsonrpc: "2.0", id: 4, method: "tools/list" }, {
        "mcp-session-id": sessionId,
        "mcp-protocol-version": SESSION_ERA
      })
      expect(own).toMatchObject({ status: 200, body: { id: 4, result: { tools } } })
      // And the honest stateless call runs.
      const honest = transferBody(5)
      expect(yield* send(url, honest, honestHeaders(honest))).toMatchObject({
        status: 200,
        body: { id: 5, result: { resultType: "complete" } }
      })
      expect(ran).toEqual([{ name: "transfer", arguments: { acct: "victim" } }])
    })))

  it.live("the reverse: a stateless-era header over a body whose _meta names another revision, or none, is refused, session or not", () =>
    Effect.scoped(Effect.gen(function*() {
      const { ran, url } = yield* serveEra()
      const sessionId = yield* Effect.promise(() => openSession(url, SESSION_ERA))
      for (const session of [{ "mcp-session-id": sessionId }, {}]) {
        const older = transferBody(6, meta(SESSION_ERA))
        expect(yield* send(url, older, { ...honestHeaders(older), ...session })).toMatchObject(mismatch(6))
        // No `_meta` at all: the stateless era's required fields are missing (400, -32602), never served.
        const bare = transferBody(7, null)
        expect(yield* send(url, bare, { ...honestHeaders(bare), ...session })).toMatchObject({
          status: 400,
          body: { id: 7, error: { code: -32602 } }
        })
      }
      expect(ran).toEqual([])
    })))

  it.live("without a session: no header, or a session-era one, over a stateless-era body is refused on every sessionless route", () =>
    Effect.scoped(Effect.gen(function*() {
      for (const options of [{}, { sessionlessPost: "serve" }, { mode: "stateless" }] as const) {
        const { ran, url } = yield* serveEra(options)
        expect(yield* send(url, transferBody(8), {})).toMatchObject({
          status: 400,
          body: { id: 8, error: { code: -32020, message: expect.stringContaining("required") } }
        })
        expect(yield* send(url, transferBody(9), { "mcp-protocol-version": SESSION_ERA, ...disguise })).toMatchObject(mismatch(9))
        // A notification carrying the stateless era's `_meta` too.
        const note = { jsonrpc: "2.0", method: "notifications/roots/list_changed", params: { _meta: meta() } }
        expect(yield* send(url, note, { "mcp-protocol-version": SESSION_ERA })).toMatchObject(mismatch(null))
        expect(ran).toEqual([])
      }
    })))

  it.live("a batch (a 2025-03-26 session) with one stateless-era member is refused whole: nothing in it runs", () =>
    Effect.scoped(Effect.gen(function*() {
      const { ran, url } = yield* serveEra()
      const sessionId = yield* Effect.promise(() => openSession(url, "2025-03-26"))
      const headers = { "mcp-session-id": sessionId, "mcp-protocol-version": "2025-03-26", ...disguise }
      const harmless = { jsonrpc: "2.0", id: 10, method: "tools/call", params: { name: "harmless" } }
      expect(yield* send(url, [harmless, transferBody(11)], headers)).toMatchObject(mismatch(null))
      expect(ran).toEqual([])
      // The same batch without the stateless member is served.
      const served = yield* send(url, [harmless], headers)
      expect(served).toMatchObject({ status: 200, body: [{ id: 10, result: { content: [{ text: "harmless done" }] } }] })
      expect(ran).toEqual([{ name: "harmless", arguments: undefined }])
    })))

  it.live("header and _meta agree on the stateless era where it is not served: the handshake era's 400 / -32600, not served by a session", () =>
    Effect.scoped(Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [HttpServerTransport.Options, Partial<McpServer.McpServerOptions>]> = [
        [{ eras: "legacy" }, {}],
        [{}, { stateless: false }]
      ]
      for (const [options, serverOptions] of cases) {
        const { ran, url } = yield* serveEra(options, serverOptions)
        const sessionId = yield* Effect.promise(() => openSession(url, SESSION_ERA))
        const honest = transferBody(12)
        const answer = yield* send(url, honest, { ...honestHeaders(honest), "mcp-session-id": sessionId })
        // Not -32022: a client of both eras reads that as a server of the stateless era and would not fall back.
        expect(answer).toMatchObject({ status: 400, body: { id: 12, error: { code: -32600, data: { requested: MODERN } } } })
        expect(answer.body.error.data.supported).not.toContain(MODERN)
        expect(ran).toEqual([])
      }
    })))

  it.live("the 2024-11-05 messages endpoint refuses a stateless-era body too", () =>
    Effect.scoped(Effect.gen(function*() {
      const { base, ran } = yield* serveEra()
      const sse = yield* Effect.promise(() => openSse(`${base}/sse`, { headers: { accept: "text/event-stream" } }))
      const reader = sse.reader!
      yield* Effect.addFinalizer(() => Effect.sync(() => reader.close()))
      yield* Effect.promise(() => reader.until((r) => r.events.some((e) => e.event === "endpoint")))
      const endpoint = reader.events.find((e) => e.event === "endpoint")!.data
      expect(yield* send(`${base}${endpoint}`, transferBody(13), disguise)).toMatchObject(mismatch(13))
      expect(ran).toEqual([])
    })))
})

/**
 * A POST through node:http, so a header given as an array goes on the wire as that many lines. Headers
 * given as one flat list of names and values (`IncomingMessage.rawHeaders`' form) go as written, names in their case.
 */
const rawPost = (port: number, body: unknown, headers: Record<string, string | ReadonlyArray<string>> | ReadonlyArray<string>) =>
  Effect.promise(() =>
    new Promise<{ status: number; body: any }>((resolve, reject) => {
      const text = JSON.stringify(body)
      const base = {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "content-length": String(Buffer.byteLength(text))
      }
      const req = http.request({
        host: "127.0.0.1",
        port,
        method: "POST",
        path: "/mcp",
        headers: Array.isArray(headers)
          ? ["host", `127.0.0.1:${port}`, ...Object.entries(base).flat(), ...headers]
          : { ...base, ...headers } as http.OutgoingHttpHeaders
      }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) }))
        res.on("error", reject)
      })
      req.on("error", reject)
      req.end(text)
    })
  )

describe("era routing: routing headers on more than one line", () => {
  const call = (name: string, acct: string, id = 1) => ({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name, arguments: { acct }, _meta: meta() }
  })
  const repeated = (header: string) => ({
    status: 400,
    body: { jsonrpc: "2.0", id: null, error: { code: -32020, message: `${header} header is sent more than once`, data: { header } } }
  })

  it.live("each routing header sent twice is 400 / -32020 naming it, even where the joined value matches the body", () =>
    Effect.scoped(Effect.gen(function*() {
      const { port, ran } = yield* serveEra()
      // An intermediary reading the first line authorizes the victim's account; joined, the lines match the body.
      const joined = call("transfer", "victim, attacker")
      const standard = RequestMeta.standardHeaders(MODERN, "tools/call", joined.params)
      expect(yield* rawPost(port, joined, { ...standard, "Mcp-Param-Acct": ["victim", "attacker"] }))
        .toEqual(repeated("Mcp-Param-Acct"))
      // The tool name the same way: the first line names a harmless tool.
      const named = call("harmless, transfer", "victim")
      expect(
        yield* rawPost(port, named, {
          ...RequestMeta.standardHeaders(MODERN, "tools/call", named.params),
          "mcp-name": ["harmless", "transfer"],
          "mcp-param-acct": "victim"
        })
      ).toEqual(repeated("Mcp-Name"))
      const honest = call("transfer", "victim")
      const headers = { ...RequestMeta.standardHeaders(MODERN, "tools/call", honest.params), "mcp-param-acct": "victim" }
      expect(yield* rawPost(port, honest, { ...headers, "mcp-method": ["tools/call", "tools/call"] })).toEqual(repeated("Mcp-Method"))
      expect(yield* rawPost(port, honest, { ...headers, "mcp-protocol-version": [MODERN, MODERN] }))
        .toEqual(repeated("MCP-Protocol-Version"))
      // Header names in any case, each line its own: the two lines count as one header sent twice.
      const lines = Object.entries(headers).filter(([name]) => name.toLowerCase() !== "mcp-method").flat()
      expect(yield* rawPost(port, honest, [...lines, "MCP-METHOD", "tools/call", "mCp-MeThOd", "tools/call"]))
        .toEqual(repeated("Mcp-Method"))
      // A name in lower case beside the same name in another case.
      expect(yield* rawPost(port, honest, [...lines, "mcp-method", "tools/call", "Mcp-Method", "tools/call"]))
        .toEqual(repeated("Mcp-Method"))
      const others = Object.entries(headers).filter(([name]) => name !== "mcp-param-acct").flat()
      const paramTwice = yield* rawPost(port, honest, [...others, "mcp-param-acct", "victim", "mcp-param-ACCT", "victim"])
      expect(paramTwice).toEqual(repeated("Mcp-Param-ACCT"))
      expect(ran).toEqual([])
      // One line each: served; other headers may repeat.
      expect(yield* rawPost(port, honest, headers)).toMatchObject({ status: 200, body: { id: 1, result: { resultType: "complete" } } })
      expect(yield* rawPost(port, honest, [...lines, "Mcp-Method", "tools/call", "CONTENT-LANGUAGE", "en", "content-language", "de"]))
        .toMatchObject({ status: 200, body: { id: 1, result: { resultType: "complete" } } })
      expect(ran).toEqual([{ name: "transfer", arguments: { acct: "victim" } }, { name: "transfer", arguments: { acct: "victim" } }])
    })))

  it.live("on a session's POST too", () =>
    Effect.scoped(Effect.gen(function*() {
      const { port, ran, url } = yield* serveEra()
      const sessionId = yield* Effect.promise(() => openSession(url, SESSION_ERA))
      const list = { jsonrpc: "2.0", id: 2, method: "tools/list" }
      const headers = { "mcp-session-id": sessionId, "mcp-protocol-version": SESSION_ERA }
      expect(yield* rawPost(port, list, { ...headers, "mcp-method": ["tools/list", "tools/call"] })).toEqual(repeated("Mcp-Method"))
      expect(yield* rawPost(port, list, headers)).toMatchObject({ status: 200, body: { id: 2, result: { tools } } })
      expect(ran).toEqual([])
    })))
})
