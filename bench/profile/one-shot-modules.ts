/**
 * The modules a one-call script loads: `OneShot.callTool` once on
 * `NodeHttpClient.layerUndici` against the minimal stateless server
 * (bench/one-shot/server-modern.ts, in a child process), counted by a module
 * load hook registered before the script's own imports. Prints the counts
 * (this project's, effect's, @effect/platform-node's, others) and, with
 * `--list`, the project's modules:
 *   npx node bench/profile/one-shot-modules.ts [--mode json|sse] [--legacy] [--list]
 * `--legacy` calls a session-era server (the SDK's) instead, so the handshake path loads too.
 * With BENCH_BUILD=dist the built JavaScript is loaded, as in a user's process.
 */
import { registerHooks } from "node:module"
import { fileURLToPath } from "node:url"
import { serverScript, startServer } from "../http/harness.ts"

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))
const args = process.argv.slice(2)
const legacy = args.includes("--legacy")
const mode = args.includes("sse") ? "sse" : "json"
const server = legacy
  ? await startServer(serverScript.sdk, ["--mode", mode])
  : await startServer(here("../one-shot/server-modern.ts"), ["--mode", mode])

const loaded: Array<string> = []
const seen = new Set<string>()
registerHooks({
  load: (url, context, next) => {
    if (!seen.has(url)) {
      seen.add(url)
      loaded.push(url)
    }
    return next(url, context)
  }
})

const { loadOneShot } = await import("../our-modules.ts")
const Effect = await import("effect/Effect")
const NodeHttpClient = await import("@effect/platform-node/NodeHttpClient")
const OneShot = await loadOneShot()
const result = await Effect.runPromise(
  OneShot.callTool(server.url, "echo", { text: "hi" }).pipe(Effect.provide(NodeHttpClient.layerUndici))
)
await server.stop()

const ours = loaded.filter((u) => !u.includes("/node_modules/") && (u.includes("/src/") || u.includes("/dist/")))
const effect = loaded.filter((u) => u.includes("/node_modules/effect/"))
const platform = loaded.filter((u) => u.includes("/node_modules/@effect/platform-node"))
const self = loaded.filter((u) => u.includes("/bench/"))
const undici = loaded.filter((u) => u.includes("/node_modules/undici/"))
const builtins = loaded.filter((u) => u.startsWith("node:"))
const other = loaded.length - ours.length - effect.length - platform.length - undici.length - builtins.length - self.length
console.log(JSON.stringify({
  ok: Array.isArray((result as { content?: unknown }).content),
  total: loaded.length - self.length,
  ours: ours.length,
  effect: effect.length,
  platformNode: platform.length,
  undici: undici.length,
  builtins: builtins.length,
  other
}))
if (args.includes("--list")) for (const u of ours) console.log(u.replace(/^.*?\/(src|dist)\//, ""))
if (args.includes("--other")) {
  for (const u of loaded) if (!ours.includes(u) && !effect.includes(u) && !platform.includes(u) && !undici.includes(u) && !builtins.includes(u) && !self.includes(u)) console.log(u)
}
