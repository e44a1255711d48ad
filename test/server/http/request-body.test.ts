/**
 * How the transport reads a POST's body on Node: straight from the
 * request's stream when nobody has started reading it, and through
 * effect/http's own reader otherwise, so that a body an application's
 * middleware read first, or one a client sends only after `100 Continue`,
 * still arrives whole.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { expect, layer } from "@effect/vitest"
import { createServer, request as httpRequest } from "node:http"
import { connect as http2Connect, createServer as createHttp2Server } from "node:http2"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import * as JsonRpc from "../../../src/JsonRpc.ts"
import type { Handler } from "../../../src/server/Handler.ts"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import { appBaseUrl as baseUrl, initializeBody, jsonHeaders, post } from "./helpers.ts"

const initializeResult = { protocolVersion: "2025-11-25", capabilities: {}, serverInfo: { name: "body", version: "1" } }

const handler: Handler = (message) =>
  Effect.succeed(
    !("id" in message)
      ? null
      : message.method === "initialize"
      ? JsonRpc.success(message.id, initializeResult)
      : JsonRpc.methodNotFound(message.id, message.method)
  )

/** Reads every request's body before the routes see the request, as a logging middleware would. */
const readsBodyFirst = <A, E, R>(app: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    yield* Effect.ignore(request.text)
    return yield* app
  })

/** Reads every request's body after the route has answered, and says what it read in a header. */
const ReadsBodyAfter = HttpRouter.middleware((route) =>
  Effect.gen(function*() {
    const response = yield* route
    const request = yield* HttpServerRequest.HttpServerRequest
    const text = yield* Effect.orElseSucceed(request.text, () => "unreadable")
    return HttpServerResponse.setHeader(response, "x-body-read-after", text)
  }), { global: true })

const routes = HttpServerTransport.routes(handler, { path: "/mcp", eventsAndHealth: false, legacySse: false })

/** The transport's routes on a loopback server, with a middleware that reads the body before or after them. */
interface ServerOptions {
  readonly readsFirst?: boolean
  readonly readsAfter?: boolean
  readonly http2?: boolean
}

const serverWith = (options: ServerOptions = {}) =>
  HttpRouter.serve(options.readsAfter === true ? Layer.mergeAll(routes, ReadsBodyAfter) : routes, {
    disableLogger: true,
    disableListenLog: true,
    ...(options.readsFirst === true ? { middleware: readsBodyFirst } : {})
  }).pipe(Layer.provideMerge(NodeHttpServer.layer(
    options.http2 === true ? () => createHttp2Server() : createServer,
    { host: "127.0.0.1", port: 0 }
  )))

interface Answer {
  readonly status: number
  readonly text: string
}

/** POSTs `body` to the endpoint as any client does. */
const postPlain = async (base: string, body: string): Promise<Answer> => {
  const res = await post(`${base}/mcp`, body)
  return { status: res.status, text: await res.text() }
}

/** POSTs `body` with `Expect: 100-continue`, sending the body only once the server says to go on. */
const postAfterContinue = (base: string, body: string) =>
  new Promise<Answer>((resolve, reject) => {
    const req = httpRequest(`${base}/mcp`, {
      method: "POST",
      headers: { ...jsonHeaders, "content-length": String(Buffer.byteLength(body)), expect: "100-continue" },
      timeout: 5_000
    })
    req.on("continue", () => req.end(body))
    req.on("timeout", () => req.destroy(new Error("no answer within 5 s")))
    req.on("error", reject)
    req.on("response", (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => (text += chunk))
      res.on("end", () => resolve({ status: res.statusCode!, text }))
    })
  })

/** POSTs `body` over HTTP/2 without TLS (h2c). */
const postHttp2 = (base: string, body: string) =>
  new Promise<Answer>((resolve, reject) => {
    const session = http2Connect(base)
    session.on("error", reject)
    const stream = session.request({
      ":method": "POST",
      ":path": "/mcp",
      ...jsonHeaders,
      "content-length": String(Buffer.byteLength(body))
    })
    let status = 0
    let text = ""
    stream.on("response", (headers) => (status = Number(headers[":status"])))
    stream.setEncoding("utf8").on("data", (chunk: string) => (text += chunk))
    stream.on("end", () => {
      session.close()
      resolve({ status, text })
    })
    stream.on("error", reject)
    stream.end(body)
  })

const initializeAnswer = { jsonrpc: "2.0", id: 1, result: initializeResult }

/** An `initialize` sent by `send` is answered as the handler answers it. */
const initializes = (send: (base: string, body: string) => Promise<Answer>) =>
  Effect.gen(function*() {
    const base = yield* baseUrl
    const answer = yield* Effect.promise(() => send(base, JSON.stringify(initializeBody())))
    expect(answer.status).toBe(200)
    expect(JSON.parse(answer.text)).toEqual(initializeAnswer)
  })

layer(serverWith())("HttpServerTransport: a POST's body on Node", (it) => {
  it.effect("arrives whole, read from the request's stream", () => initializes(postPlain))

  it.effect("arrives whole from a client that waits for 100 Continue before sending it", () =>
    initializes(postAfterContinue))
})

layer(serverWith({ readsFirst: true }))("HttpServerTransport: a POST's body an application's middleware read first", (it) => {
  it.effect("arrives whole, from effect/http's copy of it", () => initializes(postPlain))
})

layer(serverWith({ http2: true }))("HttpServerTransport: a POST's body over HTTP/2", (it) => {
  it.effect("arrives whole, read from the request's stream", () => initializes(postHttp2))
})

layer(serverWith({ readsAfter: true }))("HttpServerTransport: a POST's body read again after the route", (it) => {
  it.effect("is the body the transport read", () =>
    Effect.gen(function*() {
      const base = yield* baseUrl
      const body = JSON.stringify(initializeBody())
      const res = yield* Effect.promise(() => post(`${base}/mcp`, body))
      expect(res.status).toBe(200)
      expect(res.headers.get("x-body-read-after")).toBe(body)
    }))
})
