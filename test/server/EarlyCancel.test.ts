/**
 * A cancel that arrives before its request (separate HTTP POSTs overtake
 * each other; a fleet carries cancels between instances) keeps the request
 * from running, even when the request's effect was built before the cancel
 * came and run after it (a transport writes to its store in between).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import * as JsonRpc from "../../src/JsonRpc.ts"
import type { Handler } from "../../src/server/Handler.ts"
import * as ServerSession from "../../src/server/internal/ServerSession.ts"

const message = (id: JsonRpc.RequestId): JsonRpc.JsonRpcRequest => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name: "hold" }
})
const request = (id: JsonRpc.RequestId): JsonRpc.Classified => ({ _tag: "Request", message: message(id) })
const cancel = (id: JsonRpc.RequestId): JsonRpc.Classified => ({
  _tag: "Notification",
  message: { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: id } }
})

const session = (ran: Array<JsonRpc.RequestId>) => {
  const handler: Handler = (m) =>
    "id" in m ? Effect.sync(() => ran.push(m.id)).pipe(Effect.andThen(Effect.never)) : Effect.succeed(null)
  return ServerSession.make({ handler, send: () => Effect.void, earlyCancels: {} })
}

describe("A cancel before its request", () => {
  it.effect("drops a request whose effect was built before the cancel and run after it", () =>
    Effect.gen(function*() {
      const ran: Array<JsonRpc.RequestId> = []
      const server = yield* session(ran)
      const built = server.handleMessage(request("r-1"))
      expect(yield* server.handleMessage(cancel("r-1"))).toBeNull()
      expect(yield* built).toBeNull()
      expect(ran).toEqual([])
    }))

  it.effect("drops a request served after its cancel through `serve`, built before it", () =>
    Effect.gen(function*() {
      const ran: Array<JsonRpc.RequestId> = []
      const server = yield* session(ran)
      const replies: Array<JsonRpc.JsonRpcResponse> = []
      const built = server.serve(message("r-2"), (r) => Effect.sync(() => replies.push(r)))
      yield* server.cancelRemote("r-2")
      yield* built
      expect(server.isServing("r-2")).toBe(false)
      expect(ran).toEqual([])
      expect(replies).toEqual([])
    }))

  it.effect("a request cancelled while it runs is interrupted and not answered", () =>
    Effect.gen(function*() {
      const ran: Array<JsonRpc.RequestId> = []
      const server = yield* session(ran)
      const running = yield* Effect.forkChild(server.handleMessage(request("r-3")))
      yield* Effect.yieldNow
      expect(server.isServing("r-3")).toBe(true)
      yield* server.handleMessage(cancel("r-3"))
      expect(yield* Fiber.join(running)).toBeNull()
      expect(ran).toEqual(["r-3"])
    }))
})
