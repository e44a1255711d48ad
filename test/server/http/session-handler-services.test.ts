/**
 * A session's handlers run with the transport's services, as stateless
 * handlers do: not with the context of the POST that brought the request
 * (its `HttpServerRequest` among them), whichever POST that is.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { HttpServerRequest } from "effect/http"
import * as JsonRpc from "../../../src/JsonRpc.ts"
import type { Handler } from "../../../src/server/Handler.ts"
import { testHandler } from "../../fixtures/http-test-server.ts"
import { openSession, post, withServer } from "./helpers.ts"

const seesPost: Handler = (message, context) =>
  message.method === "probe/context" && "id" in message
    ? Effect.map(
      Effect.serviceOption(HttpServerRequest.HttpServerRequest),
      (request) => JsonRpc.success(message.id, { seesPost: Option.isSome(request) })
    )
    : testHandler()(message, context)

describe("HTTP session handlers' services", () => {
  it.effect("a session's request does not see the POST's HttpServerRequest", () =>
    withServer(undefined, async ({ url }) => {
      const sessionId = await openSession(url)
      for (const id of [2, 3]) {
        const res = await post(url, { jsonrpc: "2.0", id, method: "probe/context" }, {
          "mcp-session-id": sessionId,
          "mcp-protocol-version": "2025-11-25"
        })
        expect(res.status).toBe(200)
        expect(await res.json()).toEqual({ jsonrpc: "2.0", id, result: { seesPost: false } })
      }
    }, () => seesPost))
})
