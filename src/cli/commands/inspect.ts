/**
 * `effect-mcp-transport inspect <url> | -- <command…>`: handshake, then what the
 * server is and offers. Lists are asked for only when the server announced
 * the capability, and followed page by page.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type * as McpSchema from "effect/ai/McpSchema"
import { Argument, Command } from "effect/cli"
import type { DiscoverResult, McpClientShape } from "../../client/McpClient.ts"
import type * as ProtocolVersion from "../../ProtocolVersion.ts"
import * as Output from "../Output.ts"
import * as ServerFlags from "../ServerFlags.ts"
import * as Session from "../Session.ts"

export interface Inspection {
  readonly server: McpSchema.Implementation
  readonly protocolVersion: string
  /** `modern` (stateless, `server/discover`) or `legacy` (the `initialize` handshake). */
  readonly era: ProtocolVersion.Era
  /** Stateless era: the `server/discover` result as the server sent it (absent in the handshake era). */
  readonly discover?: DiscoverResult | undefined
  readonly transport: string
  readonly capabilities: McpSchema.ServerCapabilities
  readonly instructions?: string | undefined
  readonly tools?: ReadonlyArray<McpSchema.Tool> | undefined
  readonly resources?: ReadonlyArray<McpSchema.Resource> | undefined
  readonly resourceTemplates?: ReadonlyArray<McpSchema.ResourceTemplate> | undefined
  readonly prompts?: ReadonlyArray<McpSchema.Prompt> | undefined
}

const collect = <A, E>(stream: Stream.Stream<A, E>) => Stream.runCollect(stream)

/** What `inspect` reports, gathered over an open session. */
export const gather = (session: Session.Session): Effect.Effect<Inspection, unknown> =>
  Effect.gen(function*() {
    const client: McpClientShape = session.client
    const caps = client.serverCapabilities
    const [tools, resources, resourceTemplates, prompts] = yield* Effect.all([
      caps.tools === undefined ? Effect.succeed(undefined) : collect(client.tools()),
      caps.resources === undefined ? Effect.succeed(undefined) : collect(client.resources()),
      // Templates are optional even for servers with resources: a -32601 here is not a failure.
      caps.resources === undefined
        ? Effect.succeed(undefined)
        : collect(client.resourceTemplates()).pipe(
          Effect.catchReason("McpServerError", "RpcError", (e, group) =>
            e.code === -32601 ? Effect.succeed(undefined) : Effect.fail(group)
          )
        ),
      caps.prompts === undefined ? Effect.succeed(undefined) : collect(client.prompts())
    ])
    return {
      server: client.serverInfo,
      protocolVersion: client.protocolVersion,
      era: client.era,
      discover: client.discoverResult,
      transport: session.transport,
      capabilities: caps,
      instructions: client.instructions,
      tools,
      resources,
      resourceTemplates,
      prompts
    }
  })

const describeCapabilities = (caps: McpSchema.ServerCapabilities): string => {
  const parts: Array<string> = []
  for (const [name, value] of Object.entries(caps)) {
    if (value === undefined) continue
    const flags = typeof value === "object" && value !== null
      ? Object.entries(value).filter(([, v]) => v === true).map(([k]) => k)
      : []
    parts.push(flags.length === 0 ? name : `${name} (${flags.join(", ")})`)
  }
  return parts.length === 0 ? "none" : parts.join(", ")
}

const firstLine = (text: string | undefined): string => (text ?? "").split("\n")[0]!.trim()

/** Rows of two columns, the first padded to the widest (at most 40), each indented by two spaces. */
export const table = (rows: ReadonlyArray<readonly [string, string]>): Array<string> => {
  const width = Math.min(40, Math.max(0, ...rows.map(([a]) => a.length)))
  return rows.map(([a, b]) => (b === "" ? `  ${a}` : `  ${a.padEnd(width)}  ${b}`))
}

const section = <A>(
  title: string,
  items: ReadonlyArray<A> | undefined,
  row: (a: A) => readonly [string, string]
): Array<string> =>
  items === undefined ? [] : ["", `${title} (${items.length})`, ...(items.length === 0 ? ["  (none)"] : table(items.map(row)))]

/** How each kind of item is listed: its name or URI, then what it is. */
export const rows = {
  tool: (t: McpSchema.Tool): readonly [string, string] => [t.name, firstLine(t.description)],
  resource: (r: McpSchema.Resource): readonly [string, string] => [
    r.uri,
    [r.name, r.mimeType].filter((x) => x !== undefined).join("  ")
  ],
  resourceTemplate: (r: McpSchema.ResourceTemplate): readonly [string, string] => [r.uriTemplate, r.name],
  prompt: (p: McpSchema.Prompt): readonly [string, string] => {
    const args = (p.arguments ?? []).map((a) => (a.required === true ? `${a.name}*` : a.name))
    return [p.name, [args.length > 0 ? `(${args.join(", ")})` : "", firstLine(p.description)].filter((x) => x !== "").join(" ")]
  }
}

/** The discovery's cache hints: `ttl 60000 ms, public`, or `none`. */
const describeCacheHints = (d: DiscoverResult): string => {
  const parts = [
    ...(d.ttlMs === undefined ? [] : [`ttl ${d.ttlMs} ms`]),
    ...(d.cacheScope === undefined ? [] : [d.cacheScope])
  ]
  return parts.length === 0 ? "none" : parts.join(", ")
}

/** The human-readable report. */
export const render = (i: Inspection): string => {
  const lines = [
    `Server:        ${i.server.name} ${i.server.version}`,
    `Protocol:      ${i.protocolVersion}`,
    `Era:           ${Session.describeEra(i.era, i.protocolVersion)}`
  ]
  if (i.discover !== undefined) {
    lines.push(
      `Supported:     ${i.discover.supportedVersions.join(", ")}`,
      `Cache hints:   ${describeCacheHints(i.discover)}`
    )
  }
  lines.push(
    `Transport:     ${i.transport}`,
    `Capabilities:  ${describeCapabilities(i.capabilities)}`
  )
  if (i.instructions !== undefined && i.instructions !== "") lines.push(`Instructions:  ${firstLine(i.instructions)}`)
  lines.push(
    ...section("Tools", i.tools, rows.tool),
    ...section("Resources", i.resources, rows.resource),
    ...section("Resource templates", i.resourceTemplates, rows.resourceTemplate),
    ...section("Prompts", i.prompts, rows.prompt)
  )
  return lines.join("\n")
}

export const command = Command.make(
  "inspect",
  {
    url: Argument.String("url").pipe(
      Argument.withDescription("Streamable HTTP (or legacy SSE) URL; or give the server's command after --"),
      Argument.optional
    ),
    timeout: Session.timeoutFlag("30s", "Timeout of each list request"),
    connectTimeout: Session.connectTimeoutFlag,
    protocol: Session.protocolFlag,
    connection: ServerFlags.flags
  },
  ({ connection, connectTimeout, protocol, timeout, url }) =>
    Output.run(Effect.scoped(Effect.gen(function*() {
      const resolved = yield* ServerFlags.resolve(connection, Option.toArray(url))
      const session = yield* Session.openResolved(resolved, { timeout, connectTimeout, protocol })
      yield* Output.result(yield* gather(session), render)
    })))
).pipe(
  Command.withDescription("Connect (discovery or handshake), show the era and protocol, and list what the server offers"),
  Command.withExamples([
    { command: "effect-mcp-transport inspect http://127.0.0.1:8421/mcp", description: "A Streamable HTTP server" },
    { command: "effect-mcp-transport inspect --json -- npx -y @modelcontextprotocol/server-everything", description: "A stdio server, as JSON" }
  ])
)
