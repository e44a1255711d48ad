/**
 * A stateless-era request (2026-07-28) whose handler sent the client
 * something on the way (so its answer is an SSE stream, already under way)
 * and then died or gave no reply: the stream still ends with a -32603
 * event carrying the request's id, never just ends. (The handshake era's
 * counterpart, a failed work on a session's SSE answer, is in
 * test/server/fleet/LostReply.test.ts: there a handler's defect becomes its
 * reply, so only the fleet's records can fail the work.)
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as JsonRpc from "../../../src/JsonRpc.ts"
import * as RequestMeta from "../../../src/RequestMeta.ts"
import type { Handler } from "../../../src/server/Handler.ts"
import { openSse, withServer } from "./helpers.ts"

const MODERN = "2026-07-28"

/** `die` sends a progress notification, then dies; `silent` sends one, then gives no reply. */
const handler: Handler = Object.assign(
  (message: JsonRpc.JsonRpcRequest | JsonRpc.JsonRpcNotification, context: Parameters<Handler>[1]) => {
    if (!("id" in message)) return Effect.succeed(null)
    const progress = context.notify("notifications/progress", { progressToken: "p", progress: 1 })
    return message.method === "die"
      ? Effect.andThen(progress, Effect.die(new Error("the handler broke")))
      : Effect.as(progress, null)
  },
  { stateless: true }
)

const call = (url: string, method: string, id: number, accept: string) => {
  const params = { _meta: RequestMeta.requestMeta({ protocolVersion: MODERN, clientCapabilities: {} }) }
  return openSse(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept, ...RequestMeta.standardHeaders(MODERN, method, params) },
    body: JSON.stringify({ jsonrpc: "2.0", id, method, params })
  })
}

describe("a stateless-era request answered on an SSE stream whose handler fails", () => {
  it.live("gets -32603 with its id after what was sent on the way, whichever the client accepts", () =>
    withServer(undefined, async ({ url }) => {
      for (const accept of ["application/json, text/event-stream", "text/event-stream"]) {
        for (const [method, id] of [["die", 1], ["silent", 2]] as const) {
          const { reader, response } = await call(url, method, id, accept)
          expect(response.status).toBe(200)
          expect(reader).toBeDefined()
          await reader!.done
          expect(reader!.messages()).toEqual([
            { jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: "p", progress: 1 } },
            { jsonrpc: "2.0", id, error: { code: JsonRpc.ErrorCode.InternalError, message: "Internal error" } }
          ])
        }
      }
    }, () => handler))
})
