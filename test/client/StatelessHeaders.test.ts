/**
 * The header sets of the stateless HTTP mode: shared per method and target
 * name, right past the cache bound, extras merged under the routing headers.
 */
import { describe, expect, it } from "@effect/vitest"
import * as JsonRpc from "../../src/JsonRpc.ts"
import * as StatelessHeaders from "../../src/client/internal/StatelessHeaders.ts"

const call = (name: string) => JsonRpc.request(1, "tools/call", { name, arguments: {} })

describe("StatelessHeaders", () => {
  it("shares one record per method and per target name", () => {
    const headers = StatelessHeaders.make("2026-07-28")
    const list = headers.forMessage(JsonRpc.request(1, "tools/list", {}), undefined)
    expect(headers.forMessage(JsonRpc.request(2, "tools/list", { cursor: "c" }), undefined)).toBe(list)
    expect(list).toEqual({
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "tools/list"
    })
    expect(headers.forMessage(call("a"), undefined)).toBe(headers.forMessage(call("a"), undefined))
    expect(headers.forMessage(call("b"), undefined)["mcp-name"]).toBe("b")
    expect(headers.forMessage(JsonRpc.notification("notifications/initialized"), undefined)).toEqual({
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "notifications/initialized"
    })
  })

  it("stays right past the cache bound", () => {
    const headers = StatelessHeaders.make("2026-07-28")
    for (let i = 0; i < 600; i++) {
      expect(headers.forMessage(call(`tool-${i}`), undefined)["mcp-name"]).toBe(`tool-${i}`)
      expect(headers.forMessage(JsonRpc.request(i, `custom/${i}`, {}), undefined)["mcp-method"]).toBe(`custom/${i}`)
    }
    expect(headers.forMessage(call("tool-599"), undefined)["mcp-name"]).toBe("tool-599")
  })

  it("lower-cases extras and lets the routing headers win; a request with extras shares nothing", () => {
    const headers = StatelessHeaders.make("2026-07-28")
    const plain = headers.forMessage(call("x"), undefined)
    const withExtras = headers.forMessage(call("x"), { "Mcp-Param-Region": "eu", "Mcp-Name": "forged" })
    expect(withExtras).toEqual({ ...plain, "mcp-param-region": "eu" })
    expect(headers.forMessage(call("x"), undefined)).toBe(plain)
    expect(plain["mcp-param-region"]).toBeUndefined()
  })
})
