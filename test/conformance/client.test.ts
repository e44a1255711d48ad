/**
 * The official MCP conformance suite (client side: every scenario of the
 * 2025-11-25 and 2026-07-28 requirement lists, OAuth included, and the
 * client's auth extension scenarios: DPoP, private_key_jwt, workload
 * identity, enterprise-managed authorization) against
 * conformance/everything-client.ts, our McpClient over Streamable HTTP,
 * through the same runner as `npm run conformance`. Failures must be the ones
 * conformance/baseline.json lists, no more and no fewer.
 */
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { clientAuthExtensions, clientScenarios, readBaseline } from "../../conformance/run-server.ts"
import { runSuite } from "./runSuite.ts"

it.live("the client scenarios of both requirement lists and the auth extensions fail only as the baseline says", () =>
  Effect.gen(function*() {
    const run = yield* runSuite("client")
    const baseline = readBaseline()
    const line = (group: "2025-11-25" | "2026-07-28" | "extensions") => {
      const total = group === "extensions" ? clientAuthExtensions().length : clientScenarios(group).length
      const failed = Object.keys(baseline[group].client).length
      const expected = failed === 0 ? "" : ` (${failed} expected)`
      const name = group === "extensions" ? "extensions (auth)" : group
      return `client ${name}: ${total - failed} passed, ${failed} failed${expected}`
    }
    expect(run).toEqual({
      code: 0,
      lines: { "2025-11-25": line("2025-11-25"), "2026-07-28": line("2026-07-28"), extensions: line("extensions") },
      output: ""
    })
  }), { timeout: 420_000 })
