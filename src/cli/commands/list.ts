/**
 * `effect-mcp-transport list [url] <tools|resources|templates|prompts>` (or
 * the server's command after `--`): one of the lists `inspect` shows, every
 * page followed, one item a line (`--json`: the full objects, under the key
 * `inspect --json` uses).
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { Argument, Command } from "effect/cli"
import type { McpClientError, McpClientShape } from "../../client/McpClient.ts"
import * as Output from "../Output.ts"
import * as ServerFlags from "../ServerFlags.ts"
import * as Session from "../Session.ts"
import * as Inspect from "./inspect.ts"

export const KINDS = ["tools", "resources", "templates", "prompts"] as const
export type Kind = typeof KINDS[number]

interface Listing {
  /** The key of the list in `inspect --json`. */
  readonly key: string
  readonly items: ReadonlyArray<unknown>
  readonly rows: ReadonlyArray<readonly [string, string]>
}

const listing = <A>(
  key: string,
  stream: Stream.Stream<A, McpClientError>,
  row: (a: A) => readonly [string, string]
): Effect.Effect<Listing, McpClientError> =>
  Effect.map(Stream.runCollect(stream), (items) => ({ key, items, rows: items.map(row) }))

/** Every page of one list. */
export const gather = (client: McpClientShape, kind: Kind): Effect.Effect<Listing, McpClientError> => {
  switch (kind) {
    case "tools":
      return listing("tools", client.tools(), Inspect.rows.tool)
    case "resources":
      return listing("resources", client.resources(), Inspect.rows.resource)
    case "templates":
      return listing("resourceTemplates", client.resourceTemplates(), Inspect.rows.resourceTemplate)
    case "prompts":
      return listing("prompts", client.prompts(), Inspect.rows.prompt)
  }
}

export const command = Command.make(
  "list",
  {
    words: Argument.String("url|what").pipe(
      Argument.withDescription(
        "[url] <tools|resources|templates|prompts> (templates: resource templates); a stdio server's command goes after --"
      ),
      Argument.variadic()
    ),
    timeout: Session.timeoutFlag("30s", "Timeout of each list request"),
    connectTimeout: Session.connectTimeoutFlag,
    protocol: Session.protocolFlag,
    connection: ServerFlags.flags
  },
  ({ connection, connectTimeout, protocol, timeout, words }) =>
    Output.run(Effect.scoped(Effect.gen(function*() {
      const resolved = yield* ServerFlags.resolve(connection, words)
      const rest = resolved.rest
      const kind = KINDS.find((k) => rest.length === 1 && rest[0] === k)
      if (kind === undefined) {
        return yield* new Output.UsageError({
          message: `expected what to list: ${KINDS.join(", ")} (list [url] <what>), got ${
            rest.length === 0 ? "nothing" : `"${rest.join(" ")}"`
          }`
        })
      }
      const session = yield* Session.openResolved(resolved, { timeout, connectTimeout, protocol })
      const found = yield* gather(session.client, kind)
      if (yield* Output.Json) return yield* Output.json({ [found.key]: found.items })
      if (found.rows.length === 0) return yield* Output.note(`(no ${kind})`)
      yield* Output.line(Inspect.table(found.rows).map((row) => row.slice(2)).join("\n"))
    })))
).pipe(
  Command.withDescription("List the server's tools, resources, resource templates or prompts (every page), one a line"),
  Command.withExamples([
    { command: "effect-mcp-transport list http://127.0.0.1:8421/mcp tools", description: "The tools of an HTTP server" },
    { command: "effect-mcp-transport list prompts --json -- node server.js", description: "The prompts of a stdio server, as JSON" }
  ])
)
