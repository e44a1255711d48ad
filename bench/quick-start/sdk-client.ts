/**
 * README.md's first quick start written with the official SDK's client:
 * spawn the server, run the handshake, list every tool, call `add`, print
 * what the README's program prints, close.
 *   node bench/quick-start/sdk-client.ts <command> [args...]
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"

const [command = "npx", ...args] = process.argv.slice(2)

const client = new Client({ name: "quick-start", version: "1.0.0" })
await client.connect(new StdioClientTransport({ command, args }))
const server = client.getServerVersion()
console.log(`${server?.name} ${server?.version}`)

const tools: Array<string> = []
let cursor: string | undefined
do {
  const page = await client.listTools(cursor === undefined ? {} : { cursor })
  tools.push(...page.tools.map((tool) => tool.name))
  cursor = page.nextCursor
} while (cursor !== undefined)
console.log(`tools: ${tools.join(", ")}`)

const result = await client.callTool({ name: "add", arguments: { a: 2, b: 3 } })
console.log(result.structuredContent)

await client.close()
