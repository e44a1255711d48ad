import { describe, expect, it } from "@effect/vitest"
import * as JsonRpc from "../src/JsonRpc.ts"

describe("JsonRpc.classify", () => {
  it("tells requests, notifications and responses apart", () => {
    expect(JsonRpc.classify({ jsonrpc: "2.0", id: 1, method: "ping" })._tag).toBe("Request")
    expect(JsonRpc.classify({ jsonrpc: "2.0", method: "notifications/initialized" })._tag).toBe("Notification")
    expect(JsonRpc.classify({ jsonrpc: "2.0", id: "a", result: {} })._tag).toBe("Success")
    expect(JsonRpc.classify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "x" } })._tag).toBe("Failure")
  })

  it("names what is wrong with an invalid message", () => {
    const r = JsonRpc.classify({ jsonrpc: "1.0", id: 3, method: "x" })
    expect(r).toEqual({ _tag: "Invalid", reason: "jsonrpc must be \"2.0\"", id: 3 })
    expect(JsonRpc.classify({ jsonrpc: "2.0", id: null, method: "x" })._tag).toBe("Invalid")
    expect(JsonRpc.classify({ jsonrpc: "2.0", id: 1, result: 1, error: { code: 1, message: "" } })._tag).toBe("Invalid")
    expect(JsonRpc.classify(42)._tag).toBe("Invalid")
  })

  it("decodes batches and reports parse errors", () => {
    expect(JsonRpc.decode("[{\"jsonrpc\":\"2.0\",\"method\":\"a\"}]")._tag).toBe("Batch")
    const bad = JsonRpc.decode("{oops")
    expect(bad._tag).toBe("ParseError")
  })
})
