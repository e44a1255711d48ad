/**
 * The official MCP conformance suite (client side: the non-OAuth scenarios of
 * the 2025-11-25 and 2026-07-28 requirement lists) against
 * conformance/everything-client.ts, our McpClient over Streamable HTTP,
 * through the same runner as `npm run conformance`. Failures must be the ones
 * conformance/baseline.json lists, no more and no fewer.
 */
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { clientScenarios, readBaseline } from "../../conformance/run-server.ts"
import { runSuite } from "./runSuite.ts"

it.live("the client scenarios of both requirement lists fail only as the baseline says", () =>
  Effect.gen(function*() {
    const run = yield* runSuite("client")
    const baseline = readBaseline()
    const line = (revision: "2025-11-25" | "2026-07-28") => {
      const total = clientScenarios(revision).length
      const failed = Object.keys(baseline[revision].client).length
      const expected = failed === 0 ? "" : ` (${failed} expected)`
      return `client ${revision}: ${total - failed} passed, ${failed} failed${expected}`
    }
    expect(run).toEqual({ code: 0, lines: { "2025-11-25": line("2025-11-25"), "2026-07-28": line("2026-07-28") }, output: "" })
  }), { timeout: 300_000 })
