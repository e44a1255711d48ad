/**
 * `effect-mcp-transport read [url] <uri>` (or the server's command after
 * `--`): reads one resource (`resources/read`) and prints its contents.
 */
import * as Effect from "effect/Effect"
import type * as McpSchema from "effect/ai/McpSchema"
import { Argument, Command } from "effect/cli"
import * as Content from "../Content.ts"
import * as Output from "../Output.ts"
import * as ServerFlags from "../ServerFlags.ts"
import * as Session from "../Session.ts"

/** Each of the contents in turn: text as is, a blob summarised. */
export const render = (result: McpSchema.ReadResourceResult): string =>
  result.contents.map(Content.describeResource).join("\n")

export const command = Command.make(
  "read",
  {
    words: Argument.String("url|uri").pipe(
      Argument.withDescription("[url] <uri>: the server's URL first (or its command after --), then the resource's URI"),
      Argument.variadic()
    ),
    timeout: Session.timeoutFlag("30s", "Timeout of the read"),
    connectTimeout: Session.connectTimeoutFlag,
    protocol: Session.protocolFlag,
    connection: ServerFlags.flags
  },
  ({ connection, connectTimeout, protocol, timeout, words }) =>
    Output.run(Effect.scoped(Effect.gen(function*() {
      const resolved = yield* ServerFlags.resolveOperands(connection, words)
      if (resolved.rest.length !== 1) {
        return yield* new Output.UsageError({ message: "expected one resource URI (read [url] <uri>)" })
      }
      const session = yield* Session.openResolved(resolved, { timeout, connectTimeout, protocol })
      yield* Output.result(yield* session.client.readResource(resolved.rest[0]!), render)
    })))
).pipe(
  Command.withDescription("Read a resource (resources/read) and print its contents"),
  Command.withExamples([
    { command: "effect-mcp-transport read http://127.0.0.1:8421/mcp example://readme", description: "A resource of an HTTP server" },
    { command: "effect-mcp-transport read --json example://server-info -- node server.js", description: "The raw result, of a stdio server" }
  ])
)
