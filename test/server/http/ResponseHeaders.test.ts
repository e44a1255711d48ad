/**
 * Headers put on a response after its constructor: each is there, one of
 * the same name is replaced, the body's own headers stay, and the response
 * it started from is left as it was.
 */
import { describe, expect, it } from "@effect/vitest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as ResponseHeaders from "../../../src/server/http/ResponseHeaders.ts"

describe("ResponseHeaders.add", () => {
  it("sets each header and keeps the body's content type and length", () => {
    const base = HttpServerResponse.text(`{"ok":true}`, { status: 201, contentType: "application/json" })
    const out = ResponseHeaders.add(base, { "mcp-session-id": "s-1", vary: "Origin" })
    expect(out.status).toBe(201)
    expect({ ...out.headers }).toEqual({
      "content-type": "application/json",
      "content-length": "11",
      "mcp-session-id": "s-1",
      vary: "Origin"
    })
    expect({ ...base.headers }).toEqual({ "content-type": "application/json", "content-length": "11" })
  })

  it("replaces a header of the same name, and adds nothing for an empty record", () => {
    const base = HttpServerResponse.text("data: x\n\n", { contentType: "text/event-stream" })
    const once = ResponseHeaders.add(base, { "cache-control": "no-cache" })
    expect(ResponseHeaders.add(once, { "cache-control": "no-store" }).headers["cache-control"]).toBe("no-store")
    expect(ResponseHeaders.add(base, {})).toBe(base)
  })
})
