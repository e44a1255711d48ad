/**
 * A loopback MCP-over-HTTP server, written with `effect/http`, that answers
 * like a well-behaved Streamable HTTP server by default and misbehaves on
 * demand: per-test handlers can drop streams mid-response, send garbage,
 * answer any status, withhold the answer, and emit `retry:` and event ids.
 * Everything it receives, and every stream the client walks away from, is
 * logged so tests can await it instead of sleeping.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { type Cause, Deferred, Effect, Queue, type Scope, Stream } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { NetAddress } from "effect/net"
import { createServer } from "node:http"

export interface Received {
  readonly _tag: "Received"
  readonly verb: string
  readonly path: string
  readonly query: URLSearchParams
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  /** The parsed body when it is JSON. */
  readonly json: any
  /** `performance.now()` when the request arrived. */
  readonly at: number
}

/** The client went away before the server finished answering `request`. */
export interface Abandoned {
  readonly _tag: "Abandoned"
  readonly label: string
}

export type LogEntry = Received | Abandoned

/** Returns `undefined` to fall back to the default behaviour. */
export type Handler = (
  request: Received,
  server: MisbehavingServer
) => Effect.Effect<HttpServerResponse.HttpServerResponse | undefined>

export interface MisbehavingServer {
  readonly origin: string
  /** The Streamable HTTP endpoint, `<origin>/mcp`. */
  readonly url: string
  readonly log: () => ReadonlyArray<LogEntry>
  readonly received: (verb?: string) => ReadonlyArray<Received>
  /** Waits for the first log entry (past or future) that satisfies `predicate`. */
  readonly waitFor: <A extends LogEntry>(predicate: (entry: LogEntry) => entry is A) => Effect.Effect<A>
  readonly waitForRequest: (predicate: (request: Received) => boolean) => Effect.Effect<Received>
  readonly setHandler: (handler: Handler) => Effect.Effect<void>
  /** Holds the answer forever; logs `Abandoned(label)` when the client gives up. */
  readonly withhold: (label: string) => Effect.Effect<never>
  /** An SSE answer whose stream logs `Abandoned(label)` if the client leaves before it ends. */
  readonly sse: (
    body: Stream.Stream<string>,
    options?: { readonly label?: string; readonly status?: number; readonly headers?: Record<string, string> }
  ) => HttpServerResponse.HttpServerResponse
  /** A stream the test feeds by hand (GET listeners, legacy SSE). */
  readonly pushable: () => Effect.Effect<Pushable>
}

export interface Pushable {
  readonly stream: Stream.Stream<string>
  readonly push: (text: string) => Effect.Effect<void>
  /** Ends the stream cleanly. */
  readonly end: Effect.Effect<void>
  /** Drops the connection mid-stream. */
  readonly cut: Effect.Effect<void>
}

// ---------------------------------------------------------------------------
// Wire helpers

export interface EventFields {
  readonly id?: string | undefined
  readonly event?: string | undefined
  readonly retry?: number | undefined
  readonly data?: unknown
}

/** One SSE event; objects are JSON-encoded, strings sent as they are (split on newlines). */
export const event = (fields: EventFields): string => {
  let out = ""
  if (fields.event !== undefined) out += `event: ${fields.event}\n`
  if (fields.id !== undefined) out += `id: ${fields.id}\n`
  if (fields.retry !== undefined) out += `retry: ${fields.retry}\n`
  if (fields.data !== undefined) {
    const text = typeof fields.data === "string" ? fields.data : JSON.stringify(fields.data)
    for (const line of text.split("\n")) out += `data: ${line}\n`
  }
  return out + "\n"
}

export const result = (id: unknown, value: unknown = {}) => ({ jsonrpc: "2.0", id, result: value })
export const rpcError = (id: unknown, code: number, message: string) => ({ jsonrpc: "2.0", id, error: { code, message } })
export const notification = (method: string, params?: unknown) =>
  params === undefined ? { jsonrpc: "2.0", method } : { jsonrpc: "2.0", method, params }

export const json = (body: unknown, options?: { readonly status?: number; readonly headers?: Record<string, string> }) =>
  HttpServerResponse.text(JSON.stringify(body), {
    status: options?.status ?? 200,
    headers: options?.headers ?? {},
    contentType: "application/json"
  })

export const status = (code: number, body = "", headers: Record<string, string> = {}) =>
  HttpServerResponse.text(body, { status: code, headers, contentType: "text/plain" })

export const accepted = () => HttpServerResponse.empty({ status: 202 })

/**
 * A stream that sends `chunks` and then breaks the connection. The short pause
 * lets Node flush the corked chunks first; without it the cut would swallow them.
 */
export const cutAfter = (chunks: ReadonlyArray<string>): Stream.Stream<string> =>
  Stream.fromIterable(chunks).pipe(
    Stream.concat(Stream.fromEffect(Effect.sleep("20 millis")).pipe(Stream.drain)),
    Stream.concat(Stream.die("connection cut by the test server"))
  )

/** A stream that sends `chunks` and then stays open without a byte more. */
export const thenSilence = (chunks: ReadonlyArray<string>): Stream.Stream<string> =>
  Stream.concat(Stream.fromIterable(chunks), Stream.never)

export const SESSION_ID = "session-1"

/** A well-behaved, minimal MCP server: initialize (with a session), JSON answers, 202 for the rest. */
export const defaultHandler = (request: Received): HttpServerResponse.HttpServerResponse => {
  if (request.verb === "DELETE") return HttpServerResponse.empty({ status: 204 })
  if (request.verb === "GET") return status(405, "Method Not Allowed")
  const message = request.json
  if (message === undefined || typeof message !== "object" || message === null) return status(400, "bad body")
  if (!("id" in message) || !("method" in message)) return accepted()
  if (message.method === "initialize") {
    return json(result(message.id, {
      protocolVersion: "2025-11-25",
      capabilities: {},
      serverInfo: { name: "misbehaving", version: "0" }
    }), { headers: { "mcp-session-id": SESSION_ID } })
  }
  return json(result(message.id, { method: message.method, params: message.params ?? null }))
}

// ---------------------------------------------------------------------------

export const make: Effect.Effect<MisbehavingServer, never, Scope.Scope> = Effect.gen(function*() {
  const entries: Array<LogEntry> = []
  const waiters = new Set<{ readonly test: (entry: LogEntry) => boolean; readonly done: Deferred.Deferred<LogEntry> }>()
  let handler: Handler = () => Effect.succeed(undefined)

  const append = (entry: LogEntry) => {
    entries.push(entry)
    for (const waiter of waiters) {
      if (waiter.test(entry)) {
        waiters.delete(waiter)
        Deferred.doneUnsafe(waiter.done, Effect.succeed(entry))
      }
    }
  }

  const waitFor = <A extends LogEntry>(predicate: (entry: LogEntry) => entry is A): Effect.Effect<A> =>
    Effect.suspend(() => {
      const found = entries.find(predicate)
      if (found !== undefined) return Effect.succeed(found as A)
      const done = Deferred.makeUnsafe<LogEntry>()
      const waiter = { test: predicate, done }
      waiters.add(waiter)
      return Deferred.await(done).pipe(
        Effect.map((entry) => entry as A),
        Effect.ensuring(Effect.sync(() => waiters.delete(waiter)))
      )
    })

  const abandoned = (label: string) => Effect.sync(() => append({ _tag: "Abandoned", label }))

  const sse: MisbehavingServer["sse"] = (body, options) => {
    const label = options?.label
    let finished = false
    const tracked = label === undefined
      ? body
      : body.pipe(
        Stream.onEnd(Effect.sync(() => void (finished = true))),
        Stream.ensuring(Effect.suspend(() => finished ? Effect.void : abandoned(label)))
      )
    return HttpServerResponse.stream(tracked.pipe(Stream.encodeText), {
      status: options?.status ?? 200,
      contentType: "text/event-stream",
      headers: { "cache-control": "no-cache", ...options?.headers }
    })
  }

  const server: MisbehavingServer = {
    origin: "",
    url: "",
    log: () => entries,
    received: (verb) =>
      entries.filter((e): e is Received => e._tag === "Received" && (verb === undefined || e.verb === verb)),
    waitFor,
    waitForRequest: (predicate) => waitFor((e): e is Received => e._tag === "Received" && predicate(e)),
    setHandler: (h) => Effect.sync(() => void (handler = h)),
    withhold: (label) => Effect.never.pipe(Effect.onInterrupt(() => abandoned(label))),
    sse,
    pushable: () =>
      Effect.gen(function*() {
        const queue = yield* Queue.unbounded<string, "cut" | Cause.Done>()
        return {
          stream: Stream.fromQueue(queue).pipe(Stream.orDie),
          push: (text) => Queue.offer(queue, text).pipe(Effect.asVoid),
          end: Queue.end(queue).pipe(Effect.asVoid),
          cut: Queue.fail(queue, "cut").pipe(Effect.asVoid)
        } satisfies Pushable
      })
  }

  const app = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const body = request.method === "POST" ? yield* request.text : ""
    let parsed: unknown
    try {
      parsed = body.length > 0 ? JSON.parse(body) : undefined
    } catch {
      parsed = undefined
    }
    const url = new URL(request.url, "http://127.0.0.1")
    const received: Received = {
      _tag: "Received",
      verb: request.method,
      path: url.pathname,
      query: url.searchParams,
      headers: request.headers,
      body,
      json: parsed,
      at: performance.now()
    }
    append(received)
    const custom = yield* handler(received, server)
    return custom ?? defaultHandler(received)
  }).pipe(Effect.catchCause(() => Effect.succeed(status(500, "test server failure"))))

  const node = createServer()
  const http = yield* NodeHttpServer.make(() => node, {
    port: 0,
    host: "127.0.0.1",
    gracefulShutdownTimeout: "1 second"
  }).pipe(Effect.orDie)
  // effect 4.1's server runs the app uninterruptibly; without this a client that walks
  // away from a withheld answer is never noticed and shutdown waits for it forever.
  yield* http.serve(Effect.interruptible(app))
  // Idle keep-alive sockets of the client under test would otherwise hold shutdown up.
  yield* Effect.addFinalizer(() => Effect.sync(() => node.closeAllConnections()))
  const address = http.address
  if (!NetAddress.isInetAddress(address)) return yield* Effect.die(new Error("expected a TCP address"))
  const origin = `http://127.0.0.1:${address.port}`
  return Object.assign(server, { origin, url: `${origin}/mcp` })
})
