/**
 * Test helpers for the HTTP server transport: a real server on 127.0.0.1:0
 * for the duration of a test, raw HTTP with fetch or node:http (to forge
 * Host headers), and an SSE reader that keeps ids, comments and retry fields
 * (test code only; the transport itself uses Effect's SSE encoder).
 */
import * as http from "node:http"
import { Context, Effect, Layer, Option, type Scope } from "effect"
import { HttpServer } from "effect/http"
import { NetAddress } from "effect/net"
import type { Handler } from "../../../src/server/Handler.ts"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import { makeProbe, type Probe, testHandler } from "../../fixtures/http-test-server.ts"

export interface Server {
  /** The Streamable HTTP endpoint, e.g. http://127.0.0.1:PORT/mcp */
  readonly url: string
  /** http://127.0.0.1:PORT */
  readonly base: string
  readonly port: number
  readonly transport: HttpServerTransport.HttpServerTransportShape
  readonly probe: Probe
}

export const serve = (
  options?: HttpServerTransport.Options,
  handler?: (probe: Probe) => Handler
): Effect.Effect<Server, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const probe = yield* makeProbe
    const context = yield* Layer.build(
      HttpServerTransport.layer((handler ?? testHandler)(probe), { port: 0, ...options })
    )
    const transport = Context.get(context, HttpServerTransport.HttpServerTransport)
    const address = Option.getOrThrow(transport.address)
    const url = Option.getOrThrow(transport.url)
    return { url, base: `http://127.0.0.1:${address.port}`, port: address.port, transport, probe }
  })

/** Runs an async test body against a fresh server; the server is shut down afterwards. */
export const withServer = <A>(
  options: HttpServerTransport.Options | undefined,
  body: (server: Server) => Promise<A>,
  handler?: (probe: Probe) => Handler
): Effect.Effect<A, unknown> =>
  Effect.scoped(Effect.flatMap(serve(options, handler), (server) => Effect.promise(() => body(server))))

export const run = <A, E>(effect: Effect.Effect<A, E>): Promise<A> => Effect.runPromise(effect)

/** `http://127.0.0.1:<port>` of the effect/http server in context (an application the transport is mounted in). */
export const appBaseUrl = Effect.map(HttpServer.HttpServer, (server) => {
  const address = server.address
  if (!NetAddress.isInetAddress(address)) throw new Error("expected TCP")
  return `http://127.0.0.1:${address.port}`
})

export const initializeBody = (id: number | string = 1, protocolVersion = "2025-11-25") => ({
  jsonrpc: "2.0",
  id,
  method: "initialize",
  params: { protocolVersion, capabilities: {}, clientInfo: { name: "raw-test", version: "1.0.0" } }
})

export const jsonHeaders = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream"
}

export const post = (url: string, body: unknown, headers: Record<string, string> = {}, init: RequestInit = {}) =>
  fetch(url, {
    method: "POST",
    headers: { ...jsonHeaders, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...init
  })

/** Initializes a session over raw HTTP and sends `notifications/initialized`; returns the session id. */
export const openSession = async (url: string, protocolVersion = "2025-11-25", headers: Record<string, string> = {}) => {
  const res = await post(url, initializeBody(1, protocolVersion), headers)
  if (res.status !== 200) throw new Error(`initialize failed: ${res.status} ${await res.text()}`)
  await res.text()
  const sessionId = res.headers.get("mcp-session-id")
  if (sessionId === null) throw new Error("no session id")
  const done = await post(url, { jsonrpc: "2.0", method: "notifications/initialized" }, {
    "mcp-session-id": sessionId,
    "mcp-protocol-version": protocolVersion,
    ...headers
  })
  await done.text()
  return sessionId
}

export interface RawResponse {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
}

/** node:http request, for headers fetch will not let us set (Host) and bodies it would not send. */
export const raw = (
  port: number,
  options: { method: string; path: string; headers?: Record<string, string | number>; body?: string | Buffer }
): Promise<RawResponse> =>
  new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, method: options.method, path: options.path, headers: options.headers ?? {} }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }))
      res.on("error", reject)
    })
    req.on("error", reject)
    if (options.body !== undefined) req.write(options.body)
    req.end()
  })

// ---------------------------------------------------------------------------
// SSE reading

export interface SseEvent {
  readonly id: string | undefined
  readonly event: string
  readonly data: string
  readonly retry: number | undefined
}

const parseBlock = (block: string): SseEvent | "comment" => {
  let id: string | undefined
  let event = "message"
  const data: Array<string> = []
  let retry: number | undefined
  let fields = 0
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) continue
    const at = line.indexOf(":")
    const field = at < 0 ? line : line.slice(0, at)
    let value = at < 0 ? "" : line.slice(at + 1)
    if (value.startsWith(" ")) value = value.slice(1)
    fields++
    if (field === "id") id = value
    else if (field === "event") event = value
    else if (field === "data") data.push(value)
    else if (field === "retry") retry = Number(value)
  }
  return fields === 0 ? "comment" : { id, event, data: data.join("\n"), retry }
}

/** The JSON messages among `events` (priming and other empty events skipped). */
const messagesOf = (events: ReadonlyArray<SseEvent>): Array<any> =>
  events.filter((e) => e.event === "message" && e.data !== "").map((e) => JSON.parse(e.data))

/** The JSON messages of a whole SSE body read as text, as `SseReader.messages` reads them from a stream. */
export const sseMessages = (body: string): Array<any> =>
  messagesOf(
    body.replace(/\r\n?/g, "\n").split("\n\n").map(parseBlock).filter((e): e is SseEvent => e !== "comment")
  )

export class SseReader {
  readonly events: Array<SseEvent> = []
  raw = ""
  ended = false
  private buffer = ""
  private waiters: Array<() => void> = []
  readonly done: Promise<void>

  readonly response: Response
  private readonly controller: AbortController

  constructor(response: Response, controller: AbortController) {
    this.response = response
    this.controller = controller
    const body = response.body
    if (body === null) throw new Error("no body")
    const reader = body.pipeThrough(new TextDecoderStream()).getReader()
    this.done = (async () => {
      try {
        while (true) {
          const { value, done } = await reader.read()
          if (done) break
          this.raw += value
          this.buffer += value.replace(/\r\n?/g, "\n")
          let at: number
          while ((at = this.buffer.indexOf("\n\n")) >= 0) {
            const block = this.buffer.slice(0, at)
            this.buffer = this.buffer.slice(at + 2)
            const parsed = parseBlock(block)
            if (parsed !== "comment") this.events.push(parsed)
          }
          this.wake()
        }
      } catch {
        // aborted or cut: `ended` tells
      } finally {
        this.ended = true
        this.wake()
      }
    })()
  }

  private wake() {
    const ws = this.waiters
    this.waiters = []
    for (const w of ws) w()
  }

  /** Waits (bounded) until `predicate` holds over what was read, or the stream ends. */
  async until(predicate: (r: SseReader) => boolean, timeoutMs = 10_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs
    while (!predicate(this)) {
      if (this.ended) return predicate(this)
      const remaining = deadline - Date.now()
      if (remaining <= 0) return false
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining)
        this.waiters.push(() => {
          clearTimeout(timer)
          resolve()
        })
      })
    }
    return true
  }

  /** JSON messages received so far (priming and other empty events skipped). */
  messages(): Array<any> {
    return messagesOf(this.events)
  }

  lastId(): string | undefined {
    for (let i = this.events.length - 1; i >= 0; i--) if (this.events[i].id !== undefined) return this.events[i].id
    return undefined
  }

  close() {
    this.controller.abort()
  }
}

export const openSse = async (url: string, init: RequestInit & { headers?: Record<string, string> }) => {
  const controller = new AbortController()
  const response = await fetch(url, { ...init, signal: controller.signal })
  return { response, reader: response.ok && (response.headers.get("content-type") ?? "").includes("text/event-stream") ? new SseReader(response, controller) : undefined, controller }
}

/** A legacy HTTP+SSE session: its stream and the `/messages` URL its `endpoint` event names. */
export const openLegacy = async (base: string) => {
  const sse = await openSse(`${base}/sse`, { headers: { accept: "text/event-stream" } })
  if (sse.reader === undefined) throw new Error(`legacy SSE refused: ${sse.response.status}`)
  await sse.reader.until((r) => r.events.some((e) => e.event === "endpoint"))
  const endpoint = sse.reader.events.find((e) => e.event === "endpoint")!.data
  const send = (body: unknown) => post(`${base}${endpoint}`, body)
  return { reader: sse.reader, send }
}

/** Polls a condition with a bound (for state that settles after a connection closes). */
export const eventually = async (check: () => Promise<boolean> | boolean, timeoutMs = 5_000): Promise<boolean> => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check()) return true
    await new Promise((r) => setTimeout(r, 10))
  }
  return check()
}

export const isClean = async (transport: HttpServerTransport.HttpServerTransportShape) => {
  const s = await run(transport.stats)
  return s.sessions === 0 && s.legacySessions === 0 && s.ephemeralSessions === 0 && s.openStreams === 0 &&
    s.slotsInUse === 0 && s.inFlight === 0 && s.work === 0 && s.broadcastListeners === 0
}
