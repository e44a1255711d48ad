/**
 * Clients that ask for a large answer and never read it: the server cuts
 * their connections (JSON answers and SSE answers alike) once their sockets
 * take nothing for the send timeout, or for a quarter of it past the
 * per-stream byte bound, and lets go of what it held for them. A client
 * that reads gets the whole answer, however much larger than the bound.
 *
 * The slow clients are raw node:net sockets that send the POST and pause
 * before reading anything, so what the kernel takes fills up and stays
 * full; the answer is larger than what the kernel's buffers hold on
 * loopback (a few MiB), so the rest waits in Node.
 */
import * as net from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { eventually, isClean, openSession, post, run, withServer } from "./helpers.ts"

/** Larger than the kernel's socket buffers on loopback take from a client that does not read. */
const ANSWER = 12 * 1024 * 1024

interface Stalled {
  /** Reads again; resolves with the bytes that arrived once the connection closes (the server's cut). */
  readonly drain: () => Promise<number>
  readonly destroy: () => void
}

/** A POST for `big` sent by hand on a socket that then never reads. */
const stalledPost = (port: number, sessionId: string, id: number, accept: string): Promise<Stalled> =>
  new Promise((resolve, reject) => {
    const body = JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "big", arguments: { bytes: ANSWER } } })
    const socket = net.connect({ host: "127.0.0.1", port })
    socket.pause()
    socket.once("error", reject)
    socket.once("connect", () => {
      socket.off("error", reject)
      // A reset is how the server cuts; it shows as an error on the next read.
      socket.on("error", () => {})
      socket.write(
        `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nAccept: ${accept}\r\n` +
          `Mcp-Session-Id: ${sessionId}\r\nMcp-Protocol-Version: 2025-11-25\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
      )
      resolve({
        drain: () =>
          new Promise<number>((done) => {
            let bytes = 0
            socket.on("data", (chunk: Buffer) => {
              bytes += chunk.byteLength
            })
            socket.once("close", () => done(bytes))
            socket.resume()
          }),
        destroy: () => socket.destroy()
      })
    })
  })

const bigCall = (id: number) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "big", arguments: { bytes: ANSWER } } })

describe("HTTP server transport: answers nobody reads", () => {
  it.live("JSON answers: connections whose sockets take nothing are cut after the send timeout, and everything is freed", () =>
    // The bound is above the answer: only the send timeout cuts.
    withServer({ sendTimeout: "500 millis", maxBufferedBytesPerStream: 4 * ANSWER }, async ({ port, url, transport }) => {
      const sessionId = await openSession(url)
      const clients = await Promise.all([1, 2, 3].map((id) => stalledPost(port, sessionId, 10 + id, "application/json")))
      expect(await eventually(async () => (await run(transport.stats)).connectionsCut === 3, 20_000)).toBe(true)
      expect((await run(transport.stats)).unsentBytes).toBe(0)
      // Their exchanges end with their connections: no stream or request left open.
      expect(await eventually(async () => {
        const stats = await run(transport.stats)
        return stats.openStreams === 0 && stats.inFlight === 0
      })).toBe(true)
      // Each client, reading at last, finds its connection closed short of the answer.
      for (const client of clients) expect(await client.drain()).toBeLessThan(ANSWER)
      // The session is still served.
      const ping = await post(url, { jsonrpc: "2.0", id: 20, method: "ping" }, {
        "mcp-session-id": sessionId,
        "mcp-protocol-version": "2025-11-25"
      })
      expect(ping.status).toBe(200)
      await ping.text()
      await fetch(url, { method: "DELETE", headers: { "mcp-session-id": sessionId } })
      expect(await eventually(() => isClean(transport))).toBe(true)
    }))

  it.live("SSE answers: a connection whose socket takes nothing is cut after the send timeout", () =>
    withServer({ sendTimeout: "500 millis", maxBufferedBytesPerStream: 4 * ANSWER, responseMode: "sse" }, async ({ port, url, transport }) => {
      const sessionId = await openSession(url)
      const sse = await stalledPost(port, sessionId, 11, "application/json, text/event-stream")
      expect(await eventually(async () => (await run(transport.stats)).connectionsCut === 1, 20_000)).toBe(true)
      expect(await sse.drain()).toBeLessThan(ANSWER)
      expect((await run(transport.stats)).unsentBytes).toBe(0)
      expect(await eventually(async () => {
        const stats = await run(transport.stats)
        return stats.openStreams === 0 && stats.bufferedBytes === 0
      })).toBe(true)
      await fetch(url, { method: "DELETE", headers: { "mcp-session-id": sessionId } })
      expect(await eventually(() => isClean(transport))).toBe(true)
    }))

  it.live("a client that reads gets a whole answer many times the bound", () =>
    withServer({ sendTimeout: "20 seconds", maxBufferedBytesPerStream: 256 * 1024 }, async ({ url, transport }) => {
      const sessionId = await openSession(url)
      const res = await post(url, bigCall(11), {
        "mcp-session-id": sessionId,
        "mcp-protocol-version": "2025-11-25",
        accept: "application/json"
      })
      expect(res.status).toBe(200)
      const answer = (await res.json()) as { result: { content: Array<{ text: string }> } }
      expect(answer.result.content[0]!.text.length).toBe(ANSWER)
      expect((await run(transport.stats)).connectionsCut).toBe(0)
      await fetch(url, { method: "DELETE", headers: { "mcp-session-id": sessionId } })
      expect(await eventually(() => isClean(transport))).toBe(true)
    }))
})
