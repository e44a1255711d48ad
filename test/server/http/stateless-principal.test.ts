/**
 * The principal named by the `authenticate` hook reaches the handler on the
 * stateless path too (`HandlerContext.principal`), so what McpServer binds to
 * it (a `requestState`) cannot be carried over to another principal.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as JsonRpc from "../../../src/JsonRpc.ts"
import * as RequestMeta from "../../../src/RequestMeta.ts"
import type { Handler } from "../../../src/server/Handler.ts"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../../src/server/McpServer.ts"
import { makeAskingServer } from "../../fixtures/asking-server.ts"
import { post, serve } from "./helpers.ts"

const MODERN = "2026-07-28"

/** `Authorization: Bearer <name>` names the principal `<name>`; anything else is 401. */
const authenticate: HttpServerTransport.Authenticate = (request) => {
  const m = /^Bearer (\w+)$/.exec(request.headers.authorization ?? "")
  return m === null
    ? Effect.fail(new HttpServerTransport.Unauthorized({ wwwAuthenticate: "Bearer realm=\"mcp\"" }))
    : Effect.succeed({ id: m[1]! })
}

const modern = (method: string, params: Record<string, unknown>, id: number | null, who: string) => {
  const full = {
    ...params,
    _meta: RequestMeta.requestMeta({ protocolVersion: MODERN, clientCapabilities: { elicitation: { form: {} } } })
  }
  const body = id === null ? { jsonrpc: "2.0", method, params: full } : { jsonrpc: "2.0", id, method, params: full }
  return { body, headers: { ...RequestMeta.standardHeaders(MODERN, method, full), authorization: `Bearer ${who}` } }
}

const send = (url: string, m: ReturnType<typeof modern>) =>
  Effect.promise(async () => {
    const res = await post(url, m.body, m.headers)
    const text = await res.text()
    return { status: res.status, body: text === "" ? undefined : JSON.parse(text) as Record<string, any> }
  })

describe("Streamable HTTP, stateless era: the authenticated principal", () => {
  it.live("a stateless request and notification reach the handler with the principal authenticate named", () =>
    Effect.gen(function*() {
      const seen: Array<[string, string | undefined]> = []
      const handler: Handler = Object.assign(
        (message: JsonRpc.JsonRpcRequest | JsonRpc.JsonRpcNotification, ctx: { readonly principal?: string | undefined }) =>
          Effect.sync(() => {
            seen.push([message.method, ctx.principal])
            return "id" in message ? JsonRpc.success(message.id, { resultType: "complete" }) : null
          }),
        { stateless: true }
      )
      const { url } = yield* serve({ authenticate }, () => handler)
      expect((yield* send(url, modern("tools/list", {}, 1, "alice"))).status).toBe(200)
      expect((yield* send(url, modern("notifications/whatever", {}, null, "bob"))).status).toBe(202)
      expect(seen).toEqual([["tools/list", "alice"], ["notifications/whatever", "bob"]])
    }).pipe(Effect.scoped))

  it.live("a requestState issued to one principal is refused when another brings it back, and honoured for its own", () =>
    Effect.gen(function*() {
      const { server } = makeAskingServer({ stateless: true })
      const handle = yield* McpServer.toHandler(server)
      const { url } = yield* serve({ authenticate }, () => handle.handler)
      const first = yield* send(url, modern("tools/call", { name: "counted" }, 1, "alice"))
      expect(first.status).toBe(200)
      expect(first.body?.result).toMatchObject({ resultType: "input_required" })
      const requestState = first.body!.result.requestState as string
      const retry = (id: number, who: string) =>
        send(url, modern("tools/call", {
          name: "counted",
          requestState,
          inputResponses: { [Object.keys(first.body!.result.inputRequests)[0]!]: { action: "accept", content: { name: "Ada" } } }
        }, id, who))

      const stolen = yield* retry(2, "mallory")
      expect(stolen.body?.error).toMatchObject({ code: -32602, message: expect.stringContaining("another principal") })
      const own = yield* retry(3, "alice")
      expect(own.body?.result?.content).toEqual([{ type: "text", text: "counted Ada" }])
    }).pipe(Effect.scoped))
})
