/**
 * The official MCP conformance suite (client side, the scenarios in scope:
 * initialize, tools_call, elicitation-sep1034-client-defaults, sse-retry)
 * against conformance/everything-client.ts, our McpClient over Streamable
 * HTTP, through the same runner as `npm run conformance`.
 */
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { clientScenarios } from "../../conformance/run-server.ts"
import { runSuite } from "./runSuite.ts"

it.live("every client scenario in scope passes against conformance/everything-client.ts", () =>
  Effect.gen(function*() {
    const run = yield* runSuite("client")
    expect(run).toEqual({ code: 0, line: `client: ${clientScenarios.length} passed, 0 failed`, output: "" })
  }), { timeout: 180_000 })
