/**
 * The `echo` tool written three ways on our `McpServer`, for comparing what
 * each way of defining a tool costs per call. Every one answers
 * `{ name: "echo", arguments: { text } }`; the two typed ones give the same
 * answer (`structuredContent` `{ text: "ok", length }` and its JSON as text):
 * - `generic`: `McpServer.method("tools/call")` decoding only the envelope,
 *   answering a fixed result (the `ours` server of the workloads);
 * - `typed`: the same method dispatching by name by hand, then decoding the
 *   arguments with the tool's Schema and building the structured answer;
 * - `tool`: `Tool.add` with `parameters` and `success` Schemas.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as McpServerModule from "../../src/server/McpServer.ts"
import type * as ToolModule from "../../src/server/Tool.ts"
import { loadMcpServer, loadTool } from "../our-modules.ts"

export type Api = "generic" | "typed" | "tool"

export const apiFlag = (argv: ReadonlyArray<string> = process.argv): Api => {
  const at = argv.indexOf("--api")
  const api = at === -1 ? "generic" : argv[at + 1]
  if (api === "generic" || api === "typed" || api === "tool") return api
  throw new Error(`--api ${api}: expected generic, typed or tool`)
}

const echo = (text: string) => ({ text: text === "hi" ? "ok" : text, length: text.length })

const EchoParams = Schema.Struct({ text: Schema.String })
const EchoResult = Schema.Struct({ text: Schema.String, length: Schema.Number })

const CallParams = Schema.Struct({
  name: Schema.String,
  arguments: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
})
const decodeEcho = Schema.decodeUnknownEffect(EchoParams)
const unknownTool = (name: string) => Effect.fail(new Error(`unknown tool ${name}`))

/**
 * The server with `echo` (and `tools/list`) defined by `api`; `generic`
 * answers `result`. Built from the given modules (a build to compare), or
 * from the ones `our-modules.ts` loads.
 */
export const echoServer = async (
  api: Api,
  name: string,
  result: unknown,
  modules?: { readonly McpServer: typeof McpServerModule; readonly Tool: typeof ToolModule }
) => {
  const McpServer = modules?.McpServer ?? await loadMcpServer()
  const Tool = modules?.Tool ?? await loadTool()
  const server = McpServer.make({ serverInfo: { name, version: "1.0.0" } })
  switch (api) {
    case "generic":
      return server.pipe(
        McpServer.method("tools/list", {}, () => Effect.succeed({ tools: [{ name: "echo", inputSchema: { type: "object" } }] })),
        McpServer.method("tools/call", {}, () => Effect.succeed(result))
      )
    case "typed":
      return server.pipe(
        McpServer.method("tools/list", {}, () => Effect.succeed({ tools: [{ name: "echo", inputSchema: { type: "object" } }] })),
        McpServer.method("tools/call", { params: CallParams }, ({ arguments: args, name }) =>
          name === "echo"
            ? Effect.map(decodeEcho(args ?? {}), ({ text }) => {
              const out = echo(text)
              return { content: [{ type: "text", text: JSON.stringify(out) }], structuredContent: out }
            })
            : unknownTool(name))
      )
    case "tool":
      return server.pipe(
        Tool.add("echo", { parameters: EchoParams, success: EchoResult }, ({ text }) => Effect.succeed(echo(text)))
      )
  }
}
