/**
 * `effect-mcp-transport lint [url]` (or the server's command after `--`):
 * lists the server's tools as it sent them (every page, before the client's
 * decoding drops anything) and reports what SchemaLint finds: one line per
 * problem, then a count. Exit 1 when there is an error (a warning too, with
 * `--strict`).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Argument, Command, Flag } from "effect/cli"
import type { McpClientError, McpClientShape } from "../../client/McpClient.ts"
import * as Output from "../Output.ts"
import * as SchemaLint from "../SchemaLint.ts"
import * as ServerFlags from "../ServerFlags.ts"
import * as Session from "../Session.ts"

/** At most this many pages: a server that keeps sending cursors is not followed forever. */
const MAX_PAGES = 1000

/** Every page of `tools/list`, undecoded. */
export const rawTools = (client: McpClientShape): Effect.Effect<ReadonlyArray<unknown>, McpClientError> =>
  Effect.gen(function*() {
    const tools: Array<unknown> = []
    let cursor: string | undefined
    for (let page = 0; page < MAX_PAGES; page++) {
      const result = yield* client.request("tools/list", cursor === undefined ? {} : { cursor })
      const body = (typeof result === "object" && result !== null ? result : {}) as { tools?: unknown; nextCursor?: unknown }
      if (Array.isArray(body.tools)) tools.push(...body.tools)
      if (typeof body.nextCursor !== "string" || body.nextCursor === "") break
      cursor = body.nextCursor
    }
    return tools
  })

export interface Report {
  readonly tools: number
  readonly errors: number
  readonly warnings: number
  readonly problems: ReadonlyArray<SchemaLint.Problem>
}

export const report = (tools: ReadonlyArray<unknown>): Report => {
  const problems = SchemaLint.lint(tools)
  const errors = problems.filter((p) => p.severity === "error").length
  return { tools: tools.length, errors, warnings: problems.length - errors, problems }
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`

/** One line per problem (`search: error: inputSchema.properties.q.type: …`), then the counts. */
export const render = (r: Report): string =>
  [
    ...r.problems.map((p) => `${p.tool}: ${p.severity}: ${p.path === "" ? "" : `${p.path}: `}${p.message}`),
    `${plural(r.tools, "tool")}: ${plural(r.errors, "error")}, ${plural(r.warnings, "warning")}`
  ].join("\n")

export const command = Command.make(
  "lint",
  {
    url: Argument.String("url").pipe(
      Argument.withDescription("Streamable HTTP (or legacy SSE) URL; or give the server's command after --"),
      Argument.optional
    ),
    strict: Flag.Boolean("strict").pipe(
      Flag.withDescription("Exit 1 on warnings too (missing descriptions, names other clients may refuse, old dialects)"),
      Flag.withDefault(false)
    ),
    timeout: Session.timeoutFlag("30s", "Timeout of each list request"),
    connectTimeout: Session.connectTimeoutFlag,
    protocol: Session.protocolFlag,
    connection: ServerFlags.flags
  },
  ({ connection, connectTimeout, protocol, strict, timeout, url }) =>
    Output.run(Effect.scoped(Effect.gen(function*() {
      const resolved = yield* ServerFlags.resolve(connection, Option.toArray(url))
      const session = yield* Session.openResolved(resolved, { timeout, connectTimeout, protocol })
      if (session.client.serverCapabilities.tools === undefined) {
        yield* Output.note(`${Output.PROGRAM}: the server does not offer tools: nothing to lint`)
        return yield* new Output.Exit({ code: Output.ExitCode.Failure })
      }
      const result = report(yield* rawTools(session.client))
      yield* Output.result(result, render)
      if (result.errors > 0 || (strict && result.warnings > 0)) {
        return yield* new Output.Exit({ code: Output.ExitCode.Failure })
      }
    })))
).pipe(
  Command.withDescription(
    "Check the server's tools: JSON Schema 2020-12 structure of inputSchema and outputSchema, names, descriptions, x-mcp-header"
  ),
  Command.withExamples([
    { command: "effect-mcp-transport lint http://127.0.0.1:8421/mcp", description: "The tools of an HTTP server" },
    { command: "effect-mcp-transport lint --json --strict -- node server.js", description: "As JSON; warnings fail too" }
  ])
)
