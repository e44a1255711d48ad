/**
 * The example client the official conformance suite (client side) runs:
 * built on our `McpClient` over `StreamableHttpClientTransport`. The suite
 * starts a test server, sets `MCP_CONFORMANCE_SCENARIO` (and
 * `MCP_CONFORMANCE_PROTOCOL_VERSION`, sometimes `MCP_CONFORMANCE_CONTEXT`)
 * and appends the server's URL as the last argument:
 *
 *   MCP_CONFORMANCE_SCENARIO=tools_call npx node conformance/everything-client.ts http://localhost:PORT/mcp
 *
 * The client speaks the revision the suite names (a handshake revision runs
 * `initialize`, 2026-07-28 is stateless), or negotiates when none is named.
 * Every scenario lists the tools and does what the scenario is about; all
 * the protocol work (headers, `_meta`, retries, input rounds) is the
 * library's. Exit code 0 when the client saw no error; the suite judges the
 * rest from what it observed on the wire.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as OAuthProvider from "../src/client/auth/OAuthProvider.ts"
import * as McpClient from "../src/client/McpClient.ts"
import * as StreamableHttpClientTransport from "../src/client/StreamableHttpClientTransport.ts"
import * as ProtocolVersion from "../src/ProtocolVersion.ts"

type Client = McpClient.McpClient["Service"]

/** SEP-1034: a form the user accepts unchanged gets every field's default. */
const acceptWithDefaults = (params: McpClient.ElicitParams): McpClient.ElicitResult => {
  const properties = (params.requestedSchema?.properties ?? {}) as Record<string, { readonly default?: unknown }>
  const content: Record<string, string | number | boolean | ReadonlyArray<string>> = {}
  for (const [name, field] of Object.entries(properties)) {
    const d = field?.default
    if (typeof d === "string" || typeof d === "number" || typeof d === "boolean") content[name] = d
    else if (Array.isArray(d) && d.every((x) => typeof x === "string")) content[name] = d
  }
  return { action: "accept", content }
}

/**
 * What a scenario does once connected; `onElicit` runs before an elicitation
 * is answered (the input-round scenario makes an unrelated call there).
 */
interface Scenario {
  readonly run: (client: Client) => Effect.Effect<void, unknown>
  readonly onElicit?: (client: Client, params: McpClient.ElicitParams) => Effect.Effect<void, unknown>
}

const listed = (client: Client, name: string) =>
  Effect.gen(function*() {
    const tools = yield* client.listAllTools()
    if (!tools.some((t) => t.name === name)) return yield* Effect.fail(new Error(`the server lists no tool ${name}`))
    return tools
  })

const call = (client: Client, name: string, args: Record<string, unknown>) =>
  Effect.gen(function*() {
    const result = yield* client.callTool({ name, arguments: args })
    yield* Effect.logInfo(`${name}: ${JSON.stringify(result.content)}`)
  })

const callIfListed = (client: Client, name: string, args: Record<string, unknown>) =>
  Effect.andThen(listed(client, name), call(client, name, args))

/** The calls `MCP_CONFORMANCE_CONTEXT.toolCalls` asks for. */
const contextToolCalls = (): ReadonlyArray<{ readonly name: string; readonly arguments: Record<string, unknown> }> => {
  const raw = process.env.MCP_CONFORMANCE_CONTEXT
  if (raw === undefined) return []
  const context = JSON.parse(raw) as { toolCalls?: ReadonlyArray<{ name: string; arguments?: Record<string, unknown> }> }
  return (context.toolCalls ?? []).map((c) => ({ name: c.name, arguments: c.arguments ?? {} }))
}

/** Calls made while the first round of `test_mrtr_echo_state` waits for its answer. */
let unrelatedCalled = false

const scenarios: Record<string, Scenario> = {
  // The handshake is the scenario; its server declares no capabilities, so there may be nothing to list.
  "initialize": {
    run: (client) => client.serverCapabilities.tools === undefined ? Effect.void : Effect.asVoid(client.listAllTools())
  },
  "tools_call": { run: (client) => callIfListed(client, "add_numbers", { a: 5, b: 3 }) },
  "elicitation-sep1034-client-defaults": { run: (client) => callIfListed(client, "test_client_elicitation_defaults", {}) },
  // The server ends the call's stream after a priming event carrying `retry`;
  // the transport must come back with Last-Event-ID after that delay.
  "sse-retry": { run: (client) => callIfListed(client, "test_reconnection", {}) },
  // The server compares the schema it gets back with the one it advertised: nothing may be lost in between.
  "json-schema-2020-12-preservation": {
    run: (client) =>
      Effect.gen(function*() {
        const tools = yield* listed(client, "json_schema_echo")
        const focal = tools.find((t) => t.name === "json_schema_2020_12_tool")
        if (focal === undefined) return yield* Effect.fail(new Error("the server lists no tool json_schema_2020_12_tool"))
        yield* call(client, "json_schema_echo", { schema: focal.inputSchema })
      })
  },
  // The server refuses the first request (the discovery) with -32022 and the client retries it. The
  // server declares no capabilities, so there is nothing to list: a ping (a discovery) is one more request.
  "request-metadata": {
    run: (client) => client.serverCapabilities.tools === undefined ? client.ping() : Effect.asVoid(client.listAllTools())
  },
  // Input rounds: the elicitation is answered by `handlers.elicit`, and an
  // unrelated call goes out between the first round and its retry.
  "sep-2322-client-request-state": {
    run: (client) =>
      Effect.gen(function*() {
        yield* listed(client, "test_mrtr_echo_state")
        yield* call(client, "test_mrtr_echo_state", {})
        yield* call(client, "test_mrtr_no_state", {})
        yield* call(client, "test_mrtr_no_result_type", {})
      }),
    onElicit: (client) =>
      Effect.suspend(() => {
        if (unrelatedCalled) return Effect.void
        unrelatedCalled = true
        return call(client, "test_mrtr_unrelated", {})
      })
  },
  // Every method with a routing header, once each.
  "http-standard-headers": {
    run: (client) =>
      Effect.gen(function*() {
        const tools = yield* client.listAllTools()
        for (const tool of tools) yield* call(client, tool.name, {})
        const resources = yield* client.listAllResources()
        for (const resource of resources) yield* client.readResource(resource.uri)
        const prompts = yield* client.listAllPrompts()
        for (const prompt of prompts) yield* client.getPrompt({ name: prompt.name })
      })
  },
  "http-custom-headers": {
    run: (client) =>
      Effect.gen(function*() {
        yield* client.listAllTools()
        for (const c of contextToolCalls()) yield* call(client, c.name, c.arguments)
      })
  },
  // The listing leaves out the tools whose x-mcp-header annotations are invalid: every tool kept is called.
  "http-invalid-tool-headers": {
    run: (client) =>
      Effect.gen(function*() {
        const tools = yield* listed(client, "valid_tool")
        for (const tool of tools) yield* call(client, tool.name, { region: "us-west1" })
      })
  },
  // A `$ref` to a network URI must never be fetched: listing the tools is the whole scenario.
  "json-schema-ref-no-deref": {
    run: (client) =>
      Effect.gen(function*() {
        const tools = yield* listed(client, "lookup_user")
        yield* Effect.logInfo(`lookup_user schema: ${JSON.stringify(tools.find((t) => t.name === "lookup_user")?.inputSchema)}`)
      })
  }
}

/** What the suite hands an `auth/*` scenario's client through `MCP_CONFORMANCE_CONTEXT`. */
interface AuthContext {
  readonly client_id?: string
  readonly client_secret?: string
  /** private_key_jwt: the PKCS#8 key to sign client assertions with, and its algorithm. */
  readonly private_key_pem?: string
  readonly signing_algorithm?: "ES256" | "RS256"
  /** Workload identity: the JWT of the JWT bearer grant. */
  readonly valid_jwt?: string
  /** Enterprise-managed authorization: the identity provider and the user's ID token there. */
  readonly idp_client_id?: string
  readonly idp_id_token?: string
  readonly idp_token_endpoint?: string
}

/**
 * For the `auth/*` scenarios: an OAuth provider whose "user" follows the
 * authorization URL to its redirect at once (the suite's authorization
 * server approves without asking), with what the scenario's context gives:
 * a client id and secret or private key, a workload JWT, or an enterprise
 * identity token. DPoP is left to the provider's default ("auto": the
 * DPoP scenarios' authorization server advertises it).
 */
const authFor = (name: string) =>
  Effect.gen(function*() {
    if (!name.startsWith("auth/")) return undefined
    const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? "{}") as AuthContext
    let redirect: Promise<string> | undefined
    const enterprise = context.idp_token_endpoint !== undefined && context.idp_client_id !== undefined &&
        context.idp_id_token !== undefined
      ? {
        tokenEndpoint: context.idp_token_endpoint,
        clientId: context.idp_client_id,
        idToken: Effect.succeed(context.idp_id_token)
      }
      : undefined
    return yield* OAuthProvider.make({
      clientId: context.client_id,
      clientSecret: context.client_secret,
      clientKey: context.private_key_pem === undefined
        ? undefined
        : { privateKey: context.private_key_pem, algorithm: context.signing_algorithm },
      jwtBearer: context.valid_jwt === undefined ? undefined : Effect.succeed(context.valid_jwt),
      enterprise,
      grant: name.startsWith("auth/client-credentials") ? "client_credentials" : undefined,
      clientMetadataUrl: "https://conformance-test.local/client-metadata.json",
      redirectUrl: "http://localhost:3000/callback",
      interaction: {
        openUrl: (authorizationUrl) =>
          Effect.sync(() => {
            redirect = fetch(authorizationUrl, { redirect: "manual" }).then((r) => r.headers.get("location") ?? "")
          }),
        receiveRedirect: Effect.promise(() => redirect ?? Promise.resolve(""))
      }
    })
  })

/** The revision the suite names, or negotiation when it names none (or one we do not speak). */
const protocolOf = (named: string | undefined): "auto" | ProtocolVersion.AnyVersion =>
ProtocolVersion.isKnown(named) ? named : "auto"

/** Every `auth/*` scenario: reach the protected server, list its tools and call the first. */
const authScenario: Scenario = {
  run: (client) =>
    Effect.gen(function*() {
      const tools = yield* client.listAllTools()
      if (tools[0] !== undefined) yield* call(client, tools[0].name, {})
    })
}

const main = Effect.gen(function*() {
  const name = process.env.MCP_CONFORMANCE_SCENARIO ?? ""
  const url = process.argv[process.argv.length - 1]
  const scenario = scenarios[name] ?? (name.startsWith("auth/") ? authScenario : undefined)
  if (scenario === undefined) return yield* Effect.fail(new Error(`unknown scenario: ${name || "(MCP_CONFORMANCE_SCENARIO unset)"}`))
  if (url === undefined || !/^https?:\/\//.test(url)) return yield* Effect.fail(new Error("the server URL must be the last argument"))
  const protocol = protocolOf(process.env.MCP_CONFORMANCE_PROTOCOL_VERSION)
  yield* Effect.scoped(Effect.gen(function*() {
    let connected: Client | undefined
    const elicit = (params: McpClient.ElicitParams) =>
      Effect.gen(function*() {
        if (scenario.onElicit !== undefined && connected !== undefined) yield* Effect.orDie(scenario.onElicit(connected, params))
        return acceptWithDefaults(params)
      })
    // listen: handshake-era servers may send their requests (elicitation here) on the standalone GET stream.
    const auth = yield* authFor(name)
    const client = yield* McpClient.connect(StreamableHttpClientTransport.make({ url, listen: true, auth }), {
      protocol,
      clientInfo: { name: "effect-mcp-transport-conformance", version: "0.1.0" },
      handlers: { elicit }
    })
    connected = client
    yield* scenario.run(client)
  }))
}).pipe(Effect.provide(Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici)))

NodeRuntime.runMain(main)
