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
    expect(r).toEqual({ _tag: "Invalid", reason: "jsonrpc must be \"2.0\"", id: 3, response: false })
    expect(JsonRpc.classify({ jsonrpc: "2.0", id: null, method: "x" })._tag).toBe("Invalid")
    expect(JsonRpc.classify({ jsonrpc: "2.0", id: 1, result: 1, error: { code: 1, message: "" } })._tag).toBe("Invalid")
    expect(JsonRpc.classify(42)._tag).toBe("Invalid")
  })

  it("marks a broken message without a method as a response, with its id when the id can be read", () => {
    const shapes: ReadonlyArray<[unknown, JsonRpc.RequestId | null]> = [
      [{ jsonrpc: "2.0", id: 4, error: { message: "no code" } }, 4],
      [{ jsonrpc: "2.0", id: 4, error: { code: 1.5, message: "fractional code" } }, 4],
      [{ jsonrpc: "2.0", id: 4, error: { code: 1 } }, 4],
      [{ jsonrpc: "2.0", id: "a", result: {}, error: { code: 1, message: "both" } }, "a"],
      [{ jsonrpc: "2.0", id: 4, error: "not an object" }, 4],
      [{ jsonrpc: "2.0", id: 4 }, 4],
      [{ jsonrpc: "1.0", id: 4, result: {} }, 4],
      [{ jsonrpc: "2.0", id: null, result: {} }, null],
      [{ jsonrpc: "2.0", id: { nested: true }, error: { code: 1, message: "x" } }, null],
      [{ jsonrpc: "2.0", error: { message: "no id, no code" } }, null]
    ]
    for (const [message, id] of shapes) {
      expect(JsonRpc.classify(message)).toMatchObject({ _tag: "Invalid", response: true, id })
    }
    // A broken request or notification is not a response, whatever its id.
    expect(JsonRpc.classify({ jsonrpc: "1.0", id: 4, method: "x" })).toMatchObject({ response: false, id: 4 })
    expect(JsonRpc.classify({ jsonrpc: "2.0", id: 4, method: "x", params: 1 })).toMatchObject({ response: false })
    expect(JsonRpc.classify({ jsonrpc: "2.0", id: 4, method: 7 })).toMatchObject({ response: false })
    expect(JsonRpc.classify("text")).toMatchObject({ response: false, id: null })
  })

  it("decodes batches and reports parse errors", () => {
    expect(JsonRpc.decode("[{\"jsonrpc\":\"2.0\",\"method\":\"a\"}]")._tag).toBe("Batch")
    const bad = JsonRpc.decode("{oops")
    expect(bad._tag).toBe("ParseError")
  })
})
