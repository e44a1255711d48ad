/**
 * A stateless-era request (2026-07-28) whose handler gives no reply (a
 * handler owes every request one): the client gets a JSON-RPC -32603 with
 * the request's id, never an empty 202; a notification is still 202.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as JsonRpc from "../../../src/JsonRpc.ts"
import * as RequestMeta from "../../../src/RequestMeta.ts"
import type { Handler } from "../../../src/server/Handler.ts"
import { post, withServer } from "./helpers.ts"

const MODERN = "2026-07-28"

const silent: Handler = Object.assign(() => Effect.succeed(null), { stateless: true })

const modern = (method: string, id?: number) => {
  const params = { _meta: RequestMeta.requestMeta({ protocolVersion: MODERN, clientCapabilities: {} }) }
  const body = id === undefined ? { jsonrpc: "2.0", method, params } : { jsonrpc: "2.0", id, method, params }
  return { body, headers: RequestMeta.standardHeaders(MODERN, method, params) }
}

describe("a stateless-era request its handler gives no reply", () => {
  it.live("is answered with -32603 and its id; a notification is still 202", () =>
    withServer(undefined, async ({ url }) => {
      const list = modern("tools/list", 41)
      const res = await post(url, list.body, list.headers)
      expect(res.status).toBe(200)
      expect(await res.json()).toMatchObject({ jsonrpc: "2.0", id: 41, error: { code: JsonRpc.ErrorCode.InternalError } })
      const note = modern("notifications/roots/list_changed")
      const noted = await post(url, note.body, note.headers)
      expect(noted.status).toBe(202)
      expect(await noted.text()).toBe("")
    }, () => silent))
})
