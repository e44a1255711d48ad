/**
 * The official SDK v2 server (`@modelcontextprotocol/server` 2.4) for the
 * stateless-server workload: `createMcpHandler(factory, { legacy: "reject" })`,
 * its stateless 2026-07-28 entry (a fresh `McpServer` from the factory per
 * request, as the SDK builds it), on node:http through the peers' fetch
 * adapter (test/fixtures/peers/http-adapter.ts). Tools `echo {text}` and
 * `held`; the input schemas are converted once, outside the factory.
 *
 *   node --expose-gc bench/stateless-server/server-sdk2.ts
 */
import { createMcpHandler, fromJsonSchema, McpServer } from "@modelcontextprotocol/server"
import { serveFetch } from "../../test/fixtures/peers/http-adapter.ts"
import { announce, ECHO_SCHEMA, echoText, HELD_SCHEMA, HELD_TEXT, hold, installControl } from "./control.ts"

installControl()

const echoSchema = fromJsonSchema<{ text: string }>(ECHO_SCHEMA)
const heldSchema = fromJsonSchema(HELD_SCHEMA)
const text = (value: string) => ({ content: [{ type: "text" as const, text: value }] })

const factory = () => {
  const server = new McpServer({ name: "bench-sdk2", version: "2.4.0" }, { capabilities: { tools: {} } })
  server.registerTool("echo", { inputSchema: echoSchema }, ({ text: t }) => text(echoText(t)))
  server.registerTool("held", { inputSchema: heldSchema }, async () => {
    await hold()
    return text(HELD_TEXT)
  })
  return server
}

const handler = createMcpHandler(factory, { legacy: "reject" })
// The adapter prints `LISTENING <port>` itself; the driver reads either line.
const port = await serveFetch(handler.fetch)
announce(`http://127.0.0.1:${port}/mcp`)
