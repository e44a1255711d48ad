/**
 * The standalone server's connection limits: header and request timeouts,
 * the connection cap and the keep-alive timeout, against raw sockets that
 * send part of a request and stall, while ordinary clients are served.
 */
import * as net from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { openSession, openSse, post, withServer } from "./helpers.ts"

interface RawSocket {
  /** Everything the server wrote before the socket closed. */
  readonly closed: Promise<string>
}

/** Connects and writes `payload` (and nothing more); resolves once the connection is up. */
const stall = (port: number, payload: string): Promise<RawSocket> =>
  new Promise((resolve, reject) => {
    let received = ""
    const socket = net.connect(port, "127.0.0.1")
    const closed = new Promise<string>((done) => socket.once("close", () => done(received)))
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString("latin1")
    })
    // A reset (the connection cap) ends in `close` as well.
    socket.on("error", () => {})
    socket.once("connect", () => {
      if (payload !== "") socket.write(payload)
      resolve({ closed })
    })
    socket.once("error", reject)
  })

/** Starts of requests that never finish: a partial request line, partial headers, nothing at all. */
const partials = [
  "POST /mc",
  "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: applica",
  ""
]

const TIMED_OUT = "HTTP/1.1 408 Request Timeout\r\n"

describe("HTTP server transport: slow clients", () => {
  it.live("sockets that never finish their headers get 408 and are closed after headersTimeout; other clients are served meanwhile", () =>
    withServer({ headersTimeout: "300 millis" }, async ({ url, port }) => {
      const slow = await Promise.all(Array.from({ length: 50 }, (_, i) => stall(port, partials[i % partials.length])))
      const sessionId = await openSession(url)
      const pong = await post(url, { jsonrpc: "2.0", id: 2, method: "ping" }, { "mcp-session-id": sessionId })
      expect(await pong.json()).toEqual({ jsonrpc: "2.0", id: 2, result: {} })
      const answers = await Promise.all(slow.map((s) => s.closed))
      for (const answer of answers) expect(answer.startsWith(TIMED_OUT)).toBe(true)
    }))

  it.live("a body that does not arrive within requestTimeout gets 408 and the socket is closed", () =>
    withServer({ headersTimeout: "200 millis", requestTimeout: "400 millis" }, async ({ port }) => {
      const socket = await stall(
        port,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\""
      )
      expect((await socket.closed).startsWith(TIMED_OUT)).toBe(true)
    }))

  it.live("headersTimeout above requestTimeout is lowered to it", () =>
    withServer({ requestTimeout: "300 millis" }, async ({ port }) => {
      const socket = await stall(port, partials[1])
      expect((await socket.closed).startsWith(TIMED_OUT)).toBe(true)
    }))

  it.live("maxConnections: a connection past the cap is closed on arrival; a freed place is usable again", () =>
    withServer({ maxConnections: 2, headersTimeout: "300 millis" }, async ({ port, base }) => {
      const held = await Promise.all([stall(port, partials[0]), stall(port, partials[1])])
      const extra = await stall(port, "GET /mcp/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
      expect(await extra.closed).toBe("")
      await Promise.all(held.map((s) => s.closed))
      const health = await fetch(`${base}/mcp/health`)
      expect(health.status).toBe(200)
      await health.text()
    }))

  it.live("keepAliveTimeout closes a connection left idle after its answer", () =>
    withServer({ keepAliveTimeout: "100 millis" }, async ({ port }) => {
      const socket = await stall(port, "GET /mcp/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
      const answer = await socket.closed
      expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/)
      expect(answer).toMatch(/\r\nKeep-Alive: timeout=\d+\r\n/i)
    }))

  it.live("an SSE stream is not cut by the request or header timeout once its request has arrived", () =>
    withServer({ headersTimeout: "100 millis", requestTimeout: "200 millis", keepAliveInterval: "300 millis" }, async ({ base }) => {
      const events = await openSse(`${base}/mcp/events`, { headers: { accept: "text/event-stream" } })
      expect(events.response.status).toBe(200)
      // Two keep-alive comments: the stream is still served well past both timeouts and their checks.
      const twice = await events.reader!.until((r) => r.raw.split(": keepalive").length > 2)
      expect(twice).toBe(true)
      expect(events.reader!.ended).toBe(false)
      events.reader!.close()
    }))
})
