/**
 * The example client the official conformance suite (client side) runs:
 * built on our `McpClient` over `StreamableHttpClientTransport`. The suite
 * starts a test server, sets `MCP_CONFORMANCE_SCENARIO` and appends the
 * server's URL as the last argument:
 *
 *   MCP_CONFORMANCE_SCENARIO=tools_call npx node conformance/everything-client.ts http://localhost:PORT/mcp
 *
 * Every scenario connects (handshake), lists the tools, does what the
 * scenario is about, and closes the session. Exit code 0 when the client saw
 * no error; the suite judges the rest from what it observed on the wire.
 */
import { NodeHttpClient, NodeRuntime, NodeServices } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import * as McpClient from "../src/client/McpClient.ts"
import * as StreamableHttpClientTransport from "../src/client/StreamableHttpClientTransport.ts"

type Client = McpClient.McpClient["Service"]

/** SEP-1034: a form the user accepts unchanged gets every field's default. */
const acceptWithDefaults = (params: McpClient.ElicitParams): Effect.Effect<McpClient.ElicitResult> => {
  const properties = (params.requestedSchema?.properties ?? {}) as Record<string, { readonly default?: unknown }>
  const content: Record<string, string | number | boolean | ReadonlyArray<string>> = {}
  for (const [name, field] of Object.entries(properties)) {
    const d = field?.default
    if (typeof d === "string" || typeof d === "number" || typeof d === "boolean") content[name] = d
    else if (Array.isArray(d) && d.every((x) => typeof x === "string")) content[name] = d
  }
  return Effect.succeed({ action: "accept", content })
}

const callIfListed = (client: Client, name: string, args: Record<string, unknown>) =>
  Effect.gen(function*() {
    const tools = yield* client.listAllTools()
    if (!tools.some((t) => t.name === name)) return yield* Effect.fail(new Error(`the server lists no tool ${name}`))
    const result = yield* client.callTool({ name, arguments: args })
    yield* Effect.logInfo(`${name}: ${JSON.stringify(result.content)}`)
  })

const scenarios: Record<string, (client: Client) => Effect.Effect<void, unknown>> = {
  // The handshake is the scenario; its server declares no capabilities, so there may be nothing to list.
  "initialize": (client) => client.serverCapabilities.tools === undefined ? Effect.void : Effect.asVoid(client.listAllTools()),
  "tools_call": (client) => callIfListed(client, "add_numbers", { a: 5, b: 3 }),
  "elicitation-sep1034-client-defaults": (client) => callIfListed(client, "test_client_elicitation_defaults", {}),
  // The server ends the call's stream after a priming event carrying `retry`;
  // the transport must come back with Last-Event-ID after that delay.
  "sse-retry": (client) => callIfListed(client, "test_reconnection", {}),
  // The server compares the schema it gets back with the one it advertised: nothing may be lost in between.
  "json-schema-2020-12-preservation": (client) =>
    Effect.gen(function*() {
      const tools = yield* client.listAllTools()
      const focal = tools.find((t) => t.name === "json_schema_2020_12_tool")
      if (focal === undefined) return yield* Effect.fail(new Error("the server lists no tool json_schema_2020_12_tool"))
      yield* callIfListed(client, "json_schema_echo", { schema: focal.inputSchema })
    })
}

const main = Effect.gen(function*() {
  const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? ""
  const url = process.argv[process.argv.length - 1]
  const run = scenarios[scenario]
  if (run === undefined) return yield* Effect.fail(new Error(`unknown scenario: ${scenario || "(MCP_CONFORMANCE_SCENARIO unset)"}`))
  if (url === undefined || !/^https?:\/\//.test(url)) return yield* Effect.fail(new Error("the server URL must be the last argument"))
  yield* Effect.scoped(Effect.gen(function*() {
    // listen: servers may send their requests (elicitation here) on the standalone GET stream.
    const client = yield* McpClient.connect(StreamableHttpClientTransport.make({ url, listen: true }), {
      clientInfo: { name: "effect-mcp-transport-conformance", version: "0.1.0" },
      handlers: { elicit: acceptWithDefaults }
    })
    yield* run(client)
  }))
}).pipe(Effect.provide(Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici)))

NodeRuntime.runMain(main)
