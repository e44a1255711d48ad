/** Tool names across servers: prefixing, routing back, and the aggregated listing. */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ManagedServer from "../../../src/client/manager/ManagedServer.ts"
import { ServerStatus } from "../../../src/client/manager/ServerStatus.ts"
import * as ToolRouting from "../../../src/client/manager/ToolRouting.ts"

const servers = new Set(["files", "search"])

describe("ToolRouting", () => {
  it("routes a name to its server and tool, splitting at the first separator", () => {
    expect(ToolRouting.route("files__read", "__", servers)).toEqual({ server: "files", tool: "read" })
    // A server name never holds the separator, so the rest is the tool's name, separators included.
    expect(ToolRouting.route("files__read__all", "__", servers)).toEqual({ server: "files", tool: "read__all" })
    expect(ToolRouting.route("search.find", ".", servers)).toEqual({ server: "search", tool: "find" })
  })

  it("routes nothing for an unknown server, a missing prefix or no separator", () => {
    expect(ToolRouting.route("other__read", "__", servers)).toBeUndefined()
    expect(ToolRouting.route("__read", "__", servers)).toBeUndefined()
    expect(ToolRouting.route("files", "__", servers)).toBeUndefined()
  })

  it("refuses a server name that holds the separator as a prefix", () => {
    expect(ToolRouting.canPrefix("files", "__")).toBe(true)
    expect(ToolRouting.canPrefix("my__files", "__")).toBe(false)
  })

  it.effect("lists every server's tools under their routed names, cached ones marked", () =>
    Effect.gen(function*() {
      const make = (name: string) =>
        ManagedServer.make({
          name,
          config: { command: "x" },
          initial: ServerStatus.Connecting({ attempt: 0, lastError: undefined }),
          defaultConnectTimeoutMs: 1000,
          callWaitMs: undefined
        })
      const files = yield* make("files")
      const search = yield* make("search")
      const read = { name: "read", inputSchema: { type: "object" as const } }
      const find = { name: "find", inputSchema: { type: "object" as const } }
      files.tools = [read]
      search.tools = [find]
      search.toolsCached = true
      expect(ToolRouting.aggregate([files, search], "__")).toEqual([
        { name: "files__read", server: "files", tool: read, cached: false },
        { name: "search__find", server: "search", tool: find, cached: true }
      ])
      const routed = ToolRouting.aggregate([files, search], "__").map((t) => ToolRouting.route(t.name, "__", servers))
      expect(routed).toEqual([{ server: "files", tool: "read" }, { server: "search", tool: "find" }])
    }))
})
