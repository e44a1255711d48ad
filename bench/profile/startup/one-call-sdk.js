// One tool call as a whole process on the official SDK 1.x client: spawn the server over stdio, handshake, call `add`, close.
//   node one-call-sdk.js <command> [args...]
// Prints the result, then `teardown-ms <ms>` on stderr: `client.close()`, from its call until it resolved.
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"

const [command = "npx", ...args] = process.argv.slice(2)

const client = new Client({ name: "one-call", version: "1.0.0" })
// The whole environment, as our client passes it by default (the SDK's default is a short allow-list).
await client.connect(new StdioClientTransport({ command, args, env: { ...process.env } }))
const result = await client.callTool({ name: "add", arguments: { a: 2, b: 3 } })
console.log(JSON.stringify(result.structuredContent))
const t0 = performance.now()
await client.close()
process.stderr.write(`teardown-ms ${performance.now() - t0}\n`)
