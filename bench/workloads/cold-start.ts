/**
 * Workload 6, cold start: in a fresh process per run
 * (`bench/cold-start-client.ts`), each client opens against the raw
 * responder, makes one `tools/call` and closes. Figures, in ms:
 * - process start → first result: from the parent's spawn of the process
 *   (Node start-up, loading modules, spawn of the server, handshake, one call);
 * - Node boot: process start → the script's first line, by Node's own clock;
 * - import: loading the client's modules (for Effect clients, mostly `effect`);
 * - open → first result: spawn + handshake + one call, modules already loaded;
 * - teardown: close → the server process is gone.
 * Runs of different clients are interleaved. Our clients load the built
 * JavaScript in `dist/` (`npm run bench` builds it first), as a user's process
 * does: the peers, too, are loaded as the JavaScript they publish.
 *
 * Environment: BENCH_COLD_CLIENTS (raw,ours,ours-mcp,sdk,effect-ai).
 */
import { existsSync } from "node:fs"
import { envList, groupRows, interleave, mapLimited, parallelism, runJsonLines, Samples, script } from "../child.ts"
import type { Target, Workload } from "../workload.ts"

interface Result {
  readonly bootMs: number
  readonly importMs: number
  readonly openMs: number
  readonly firstResultAt: number
  readonly closeMs: number
  readonly teardownMs: number
}

const NAME = "cold start"
const TOTAL = "process start → first result"

const noSlower = (variant: string, ours: string): Target => ({ workload: NAME, variant, ours, peer: "sdk", atLeast: 1 })

export const workload: Workload = {
  name: NAME,
  targets: [noSlower(TOTAL, "ours-mcp"), noSlower(TOTAL, "ours"), noSlower("teardown", "ours-mcp")],
  run: async ({ runs, smoke }) => {
    const clients = envList("BENCH_COLD_CLIENTS", "raw,ours,ours-mcp,sdk,effect-ai")
    if (!existsSync(new URL("../../dist/client/McpClient.js", import.meta.url))) {
      throw new Error("cold start loads our built modules: run `npm run build` first (`npm run bench` does)")
    }
    const samples = new Samples(NAME)
    const results = await mapLimited(interleave(runs, clients), parallelism(smoke), async (client) => {
      const spawnedAt = performance.timeOrigin + performance.now()
      const [result] = await runJsonLines<Result>(script("./cold-start-client.ts"), [client], {
        env: { BENCH_BUILD: "dist" }
      })
      return { client, spawnedAt, x: result! }
    })
    for (const { client, spawnedAt, x } of results) {
      samples.add(TOTAL, client, "ms", x.firstResultAt - spawnedAt)
      samples.add("Node boot", client, "ms", x.bootMs)
      samples.add("import", client, "ms", x.importMs)
      samples.add("open → first result", client, "ms", x.openMs)
      samples.add("teardown", client, "ms", x.teardownMs)
    }
    return groupRows(samples.rows())
  }
}
