/**
 * Teardown time of the stdio client transport, builds or settings of it
 * compared in one process, runs interleaved: open against the raw responder, one `ping`,
 * then time `Scope.close` (stdin ends, the server exits, the group and any
 * recorded descendants are checked) until it returns.
 *
 *   npx node bench/profile/teardown-ab.ts <runs> <variant> [variant...]
 *
 * A variant is a src dir holding `client/StdioClientTransport.ts` and
 * `client/NodeSpawner.ts` (e.g. `src`, or the `src` of another commit checked
 * out under /tmp/before), optionally followed by `#untracked` to turn
 * descendant tracking off (`shutdown.descendantSampleInterval: false`) or
 * `#noSampler` to read the tree only at teardown (`Duration.infinity`).
 * Prints the median, p25 and p75 of each in ms.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"

const [runsText = "30", ...dirs] = process.argv.slice(2)
const runs = Number(runsText)
const responder = new URL("../raw-responder.ts", import.meta.url).pathname

const load = async (variant: string) => {
  const [dir = "src", flag] = variant.split("#")
  const shutdown = flag === "untracked"
    ? { descendantSampleInterval: false as const }
    : flag === "noSampler" ? { descendantSampleInterval: "Infinity" as const } : {}
  const url = (p: string) => pathToFileURL(resolve(dir, p)).href
  const Stdio = (await import(url("client/StdioClientTransport.ts"))) as typeof import("../../src/client/StdioClientTransport.ts")
  const Spawner = (await import(url("client/NodeSpawner.ts"))) as typeof import("../../src/client/NodeSpawner.ts")
  return Effect.gen(function*() {
    const scope = yield* Scope.make()
    const t = yield* Stdio.make({ command: process.execPath, args: [responder], shutdown }).pipe(Scope.provide(scope))
    yield* t.request("ping")
    const t0 = performance.now()
    yield* Scope.close(scope, Exit.void)
    return performance.now() - t0
  }).pipe(Effect.provide(Spawner.layer))
}

const variants = await Promise.all(
  dirs.map(async (variant) => ({ variant, once: await load(variant), times: [] as Array<number> }))
)
for (const v of variants) await Effect.runPromise(v.once) // warm-up
for (let r = 0; r < runs; r++) {
  for (const v of variants) v.times.push(await Effect.runPromise(v.once))
}
const q = (xs: Array<number>, p: number) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * p)]!
for (const v of variants) {
  console.log(JSON.stringify({
    variant: v.variant,
    runs,
    medianMs: +q(v.times, 0.5).toFixed(2),
    p25Ms: +q(v.times, 0.25).toFixed(2),
    p75Ms: +q(v.times, 0.75).toFixed(2)
  }))
}
