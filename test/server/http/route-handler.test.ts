/**
 * The transport's routes as router handlers: each reads its request from the
 * fiber that runs it, in one step, and sees the very request the router
 * provides (its method, URL and headers), as the router's own lookup would.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import * as Guard from "../../../src/server/http/Guard.ts"

describe("a route as the router's handler", () => {
  it.effect("gets the request the router provides, as a route given to the router itself does", () =>
    Effect.promise(async () => {
      const seen: Array<string> = []
      const answer = (request: HttpServerRequest.HttpServerRequest, how: string) => {
        const line = `${how} ${request.method} ${request.url} ${request.headers["x-probe"]}`
        seen.push(line)
        return Effect.succeed(HttpServerResponse.text(line))
      }
      const routes = Layer.mergeAll(
        HttpRouter.add("POST", "/ours", Guard.handler((request) => answer(request, "ours"))),
        HttpRouter.add("POST", "/router", (request) => answer(request, "router"))
      )
      const { dispose, handler } = HttpRouter.toWebHandler(routes, { disableLogger: true })
      try {
        for (const path of ["/ours?a=1", "/router?a=1"]) {
          const response = await handler(
            new Request(`http://127.0.0.1${path}`, { method: "POST", headers: { "x-probe": "yes" }, body: "{}" })
          )
          expect(response.status).toBe(200)
        }
      } finally {
        await dispose()
      }
      expect(seen).toEqual(["ours POST /ours?a=1 yes", "router POST /router?a=1 yes"])
    }))
})
