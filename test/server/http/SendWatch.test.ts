/**
 * The send watch's rule on stand-in sockets, under the test clock: bytes
 * waiting that the socket takes none of cut the connection after the send
 * timeout, or after a quarter of it past the byte bound; any progress, or
 * nothing waiting, keeps it; a connection is watched once, whatever number
 * of responses it carries, until it closes.
 */
import { EventEmitter } from "node:events"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import { TestClock } from "effect/testing"
import * as SendWatch from "../../../src/server/http/SendWatch.ts"

class FakeSocket extends EventEmitter {
  destroyed = false
  writableLength = 0
  bytesWritten = 0
  resets = 0
  readonly _handle = { writeQueueSize: 0 }
  destroy() {
    this.destroyed = true
    this.emit("close")
  }
  resetAndDestroy() {
    this.resets++
    this.destroy()
  }
  /** Node took `bytes` to write, and libuv queued what the kernel did not take. */
  write(bytes: number) {
    this.bytesWritten += bytes
    this.writableLength += bytes
    this._handle.writeQueueSize += bytes
  }
}

class FakeResponse {
  writableFinished = false
  destroyed = false
  readonly socket: FakeSocket
  constructor(socket = new FakeSocket()) {
    this.socket = socket
  }
}

const requestFor = (response: FakeResponse) => ({ response }) as unknown as HttpServerRequest.HttpServerRequest

const TIMEOUT = 800
const BOUND = 1000

const watching = (response: FakeResponse) =>
  Effect.gen(function*() {
    const watch = yield* SendWatch.make({ sendTimeoutMs: TIMEOUT, maxBufferedBytes: BOUND })
    yield* (watch.watchUnsafe(requestFor(response)) ?? Effect.void)
    return watch
  })

describe("SendWatch", () => {
  it.effect("bytes waiting that the socket takes none of: cut after the send timeout, not before", () =>
    Effect.gen(function*() {
      const response = new FakeResponse()
      const watch = yield* watching(response)
      response.socket.write(BOUND)
      expect(watch.unsentBytes()).toBe(BOUND)
      yield* TestClock.adjust(TIMEOUT - 200)
      expect(response.socket.destroyed).toBe(false)
      yield* TestClock.adjust(300)
      expect(response.socket.resets).toBe(1)
      expect(watch.cut()).toBe(1)
      expect(watch.unsentBytes()).toBe(0)
    }))

  it.effect("past the byte bound: cut after a quarter of the send timeout", () =>
    Effect.gen(function*() {
      const response = new FakeResponse()
      const watch = yield* watching(response)
      response.socket.write(BOUND + 1)
      yield* TestClock.adjust(TIMEOUT / 4 + 100)
      expect(response.socket.resets).toBe(1)
      expect(watch.cut()).toBe(1)
    }))

  it.effect("a socket that keeps taking bytes is never cut, however much waits", () =>
    Effect.gen(function*() {
      const response = new FakeResponse()
      const watch = yield* watching(response)
      response.socket.write(100 * BOUND)
      for (let i = 0; i < 20; i++) {
        // libuv hands part of the current write to the kernel; the write itself completes only at the end.
        response.socket._handle.writeQueueSize -= BOUND
        yield* TestClock.adjust(TIMEOUT / 4 - 50)
      }
      expect(response.socket.destroyed).toBe(false)
      // The write completes and the next one starts: progress too.
      response.socket.writableLength = 0
      response.socket._handle.writeQueueSize = 0
      response.socket.write(5 * BOUND)
      yield* TestClock.adjust(TIMEOUT / 4 - 50)
      expect(response.socket.destroyed).toBe(false)
      expect(watch.cut()).toBe(0)
    }))

  it.effect("nothing waiting (a handler at work, an idle stream): never cut", () =>
    Effect.gen(function*() {
      const response = new FakeResponse()
      const watch = yield* watching(response)
      yield* TestClock.adjust(10 * TIMEOUT)
      expect(response.socket.destroyed).toBe(false)
      expect(watch.cut()).toBe(0)
    }))

  it.effect("a connection that closed is no longer watched", () =>
    Effect.gen(function*() {
      const response = new FakeResponse()
      const watch = yield* watching(response)
      response.socket.write(BOUND)
      expect(watch.unsentBytes()).toBe(BOUND)
      response.socket.emit("close")
      expect(watch.unsentBytes()).toBe(0)
      yield* TestClock.adjust(10 * TIMEOUT)
      expect(response.socket.resets).toBe(0)
      expect(watch.cut()).toBe(0)
    }))

  it.effect("a keep-alive connection is watched once, idle between its responses and cut when one stalls", () =>
    Effect.gen(function*() {
      const first = new FakeResponse()
      const watch = yield* watching(first)
      // The first answer goes out whole; the connection then waits for the next request.
      first.socket.write(BOUND)
      first.socket.writableLength = 0
      first.socket._handle.writeQueueSize = 0
      first.writableFinished = true
      yield* TestClock.adjust(10 * TIMEOUT)
      expect(first.socket.destroyed).toBe(false)
      // The next response on the same connection: no second entry, one listener.
      const second = new FakeResponse(first.socket)
      yield* (watch.watchUnsafe(requestFor(second)) ?? Effect.void)
      expect(first.socket.listenerCount("close")).toBe(1)
      second.socket.write(BOUND)
      expect(watch.unsentBytes()).toBe(BOUND)
      yield* TestClock.adjust(TIMEOUT + 200)
      expect(second.socket.resets).toBe(1)
      expect(watch.cut()).toBe(1)
      expect(watch.unsentBytes()).toBe(0)
    }))

  it.effect("without a send timeout nothing is watched", () =>
    Effect.gen(function*() {
      const response = new FakeResponse()
      const watch = yield* SendWatch.make({ sendTimeoutMs: undefined, maxBufferedBytes: BOUND })
      yield* (watch.watchUnsafe(requestFor(response)) ?? Effect.void)
      response.socket.write(100 * BOUND)
      yield* TestClock.adjust("1 hour")
      expect(response.socket.destroyed).toBe(false)
      expect(watch.unsentBytes()).toBe(0)
    }))
})
