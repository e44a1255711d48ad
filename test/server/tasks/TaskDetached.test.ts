/**
 * A task's handler runs detached from the request that started it: it sees
 * the server's services and its own context, not the request's HTTP
 * request, scope or span (the task's spans keep the request's trace by its
 * ids only), so that a live task keeps none of them alive.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Option, Scope, Tracer } from "effect"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as JsonRpc from "../../../src/JsonRpc.ts"
import * as RequestMeta from "../../../src/RequestMeta.ts"
import type { HandlerContext } from "../../../src/server/Handler.ts"
import * as McpServer from "../../../src/server/McpServer.ts"
import * as Tool from "../../../src/server/Tool.ts"
import { TASKS } from "./harness.ts"

/** A service of the server, which a task's handler needs. */
class Greeting extends Context.Service<Greeting, string>()("test/TaskDetached/Greeting") {}

const seen = Effect.gen(function*() {
  const greeting = yield* Greeting
  const request = yield* Effect.serviceOption(HttpServerRequest.HttpServerRequest)
  const scope = yield* Effect.scope
  const parent = yield* Effect.serviceOption(Tracer.ParentSpan)
  return { greeting, request, scope, parent }
})

type Seen = Effect.Success<typeof seen>

const setup = Effect.gen(function*() {
  const found = yield* Deferred.make<Seen>()
  const server = McpServer.make({ serverInfo: { name: "detached", version: "1.0.0" }, stateless: true }).pipe(
    Tool.add("probe", { taskSupport: "optional" }, () =>
      Effect.flatMap(seen, (s) => Effect.as(Deferred.succeed(found, s), s.greeting)))
  )
  const handle = yield* McpServer.toHandler(server)
  const hctx: HandlerContext = {
    sessionId: undefined,
    requestId: 1,
    principal: undefined,
    notify: () => Effect.void,
    request: (method) => Effect.die(`unexpected request ${method}`)
  }
  const params = (clientCapabilities: Record<string, unknown>) => ({
    name: "probe",
    arguments: {},
    _meta: RequestMeta.requestMeta({ protocolVersion: "2026-07-28", clientCapabilities })
  })
  const fakeRequest = {} as HttpServerRequest.HttpServerRequest
  const requestScope = yield* Scope.make()
  /** Serves one tools/call as an HTTP transport would: under its request, its scope and its span. */
  const call = (capabilities: boolean) =>
    Effect.gen(function*() {
      const span = yield* Effect.makeSpan("POST /mcp")
      const reply = yield* handle.handler(
        JsonRpc.request(1, "tools/call", params(capabilities ? TASKS : {})) as JsonRpc.JsonRpcRequest,
        hctx
      ).pipe(
        Effect.provideService(HttpServerRequest.HttpServerRequest, fakeRequest),
        Effect.provideService(Scope.Scope, requestScope),
        Effect.provideService(Tracer.ParentSpan, span),
        Effect.provideService(Greeting, "hello")
      )
      return { reply: reply as any, span, seen: yield* Deferred.await(found) }
    })
  return { call, requestScope, fakeRequest }
})

describe("tasks: detached from the request", () => {
  it.effect("a task's handler sees the server's services but not the request's HTTP request, scope or span", () =>
    Effect.gen(function*() {
      const { call, requestScope } = yield* setup
      const { reply, span, seen } = yield* call(true)
      expect(reply.result).toMatchObject({ resultType: "task", status: "working" })
      expect(seen.greeting).toBe("hello")
      expect(Option.isNone(seen.request)).toBe(true)
      expect(seen.scope).not.toBe(requestScope)
      // The request's trace, by its ids: not the span object.
      expect(Option.getOrThrow(seen.parent)).toEqual(
        Tracer.externalSpan({ traceId: span.traceId, spanId: span.spanId, sampled: span.sampled })
      )
      // Closing the request's scope leaves the task's alone.
      yield* Scope.close(requestScope, Exit.void)
      yield* Scope.addFinalizer(seen.scope, Effect.void)
    }))

  it.effect("the same handler run inline keeps the request's services", () =>
    Effect.gen(function*() {
      const { call, fakeRequest, requestScope } = yield* setup
      const { reply, span, seen } = yield* call(false)
      expect(reply.result).toMatchObject({ content: [{ type: "text", text: "hello" }] })
      expect(Option.getOrThrow(seen.request)).toBe(fakeRequest)
      expect(seen.scope).toBe(requestScope)
      expect(Option.getOrThrow(seen.parent)).not.toEqual(Tracer.externalSpan({ traceId: span.traceId, spanId: span.spanId }))
    }))
})
