/**
 * Tasks over a real loopback Streamable HTTP server (stateless era): a task
 * outlives the POST that created it, its requests are routed by `Mcp-Name`
 * (`params.taskId`), and a missing or wrong `Mcp-Name` is refused with 400
 * and -32020 before the task is touched.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Layer, Option } from "effect"
import * as RequestMeta from "../../../src/RequestMeta.ts"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../../src/server/McpServer.ts"
import { post } from "../http/helpers.ts"
import { ACK, ackOf, makeProbes, makeServer, TASKS } from "./harness.ts"

const MODERN = "2026-07-28"

let nextId = 1

/** A modern POST as our client sends it (body and routing headers), with `headers` over them; its JSON-RPC reply. */
const call = (url: string, method: string, params: Record<string, unknown>, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const id = nextId++
    const full = { ...params, _meta: RequestMeta.requestMeta({ protocolVersion: MODERN, clientCapabilities: TASKS }) }
    const res = await post(url, { jsonrpc: "2.0", id, method, params: full }, { ...RequestMeta.standardHeaders(MODERN, method, full), ...headers })
    const text = await res.text()
    const reply = (res.headers.get("content-type") ?? "").includes("text/event-stream")
      ? text.split("\n").filter((l) => l.startsWith("data:")).map((l) => JSON.parse(l.slice(5))).find((m) => m.id === id)
      : JSON.parse(text)
    return { status: res.status, reply: reply as any }
  })

const serve = Effect.gen(function*() {
  const probes = yield* makeProbes
  const handle = yield* McpServer.toHandler(makeServer(probes))
  const context = yield* Layer.build(HttpServerTransport.layer(handle.handler, { port: 0 }))
  const url = Option.getOrThrow(Context.get(context, HttpServerTransport.HttpServerTransport).url)
  return { url, probes }
})

describe("tasks over Streamable HTTP", () => {
  it.live("a task outlives its POST and is polled to completion with Mcp-Name = taskId", () =>
    Effect.gen(function*() {
      const { url, probes } = yield* serve
      const created = yield* call(url, "tools/call", { name: "wait", arguments: {} })
      expect(created.status).toBe(200)
      expect(created.reply.result).toMatchObject({ resultType: "task", status: "working" })
      const taskId: string = created.reply.result.taskId
      // The POST is answered and closed; the handler still runs.
      yield* Deferred.await(probes.started)
      const working = yield* call(url, "tasks/get", { taskId })
      expect(working.reply.result).toMatchObject({ resultType: "complete", taskId, status: "working" })
      yield* Deferred.succeed(probes.release, undefined)
      let status = "working"
      while (status === "working") status = (yield* call(url, "tasks/get", { taskId })).reply.result.status
      expect(status).toBe("completed")
      expect(yield* Deferred.isDone(probes.interrupted)).toBe(false)
    }).pipe(Effect.scoped), 30_000)

  it.live("tasks/get, tasks/update and tasks/cancel with a wrong or missing Mcp-Name: 400 -32020, and the task is untouched", () =>
    Effect.gen(function*() {
      const { url, probes } = yield* serve
      const { taskId } = (yield* call(url, "tools/call", { name: "wait", arguments: {} })).reply.result
      for (const [method, extra] of [["tasks/get", {}], ["tasks/update", { inputResponses: {} }], ["tasks/cancel", {}]] as const) {
        const wrong = yield* call(url, method, { taskId, ...extra }, { "mcp-name": "another-task" })
        expect({ method, status: wrong.status, code: wrong.reply.error?.code }).toEqual({ method, status: 400, code: -32020 })
        const headers = RequestMeta.standardHeaders(MODERN, method, { taskId })
        delete (headers as Record<string, string>)["mcp-name"]
        const missing = yield* Effect.promise(() =>
          post(url, {
            jsonrpc: "2.0",
            id: 99,
            method,
            params: { taskId, ...extra, _meta: RequestMeta.requestMeta({ protocolVersion: MODERN, clientCapabilities: TASKS }) }
          }, headers).then(async (r) => ({ status: r.status, body: await r.json() as any })))
        expect({ method, status: missing.status, code: missing.body.error?.code }).toEqual({ method, status: 400, code: -32020 })
      }
      expect((yield* call(url, "tasks/get", { taskId })).reply.result.status).toBe("working")
      expect(ackOf((yield* call(url, "tasks/cancel", { taskId })).reply.result)).toEqual(ACK)
      yield* Deferred.await(probes.interrupted)
    }).pipe(Effect.scoped), 30_000)
})
