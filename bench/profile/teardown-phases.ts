/**
 * Where a cold close of a stdio client goes, in fresh processes: open against
 * the raw responder, one `tools/call`, then `close()`, split at the moment
 * stdin's end reaches the server (the responder writes it, on the same
 * monotonic clock): `toEofMs`, the client's work before the server can start
 * exiting, and `afterEofMs`, the server's exit and what the client does after
 * it. Runs the clients interleaved and prints medians.
 *
 *   npx node bench/profile/teardown-phases.ts [runs=10] [client...]
 *
 * A client is a bench client name (default `ours ours-mcp`), `NAME+untracked`
 * for the same with BENCH_STDIO_UNTRACKED=1; BENCH_BUILD=dist applies.
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

if (process.env.TEARDOWN_CHILD === "1") {
  const { loaderFor } = await import("../clients/index.ts")
  const client = await (await loaderFor(process.argv[2]!)()).make(process.execPath, [
    new URL("../raw-responder.ts", import.meta.url).pathname
  ])
  await client.callTool()
  const start = process.hrtime.bigint() / 1000n
  await client.close()
  const end = process.hrtime.bigint() / 1000n
  const eof = BigInt(readFileSync(process.env.BENCH_EOF_FILE!, "utf8"))
  console.log(JSON.stringify({ toEofMs: Number(eof - start) / 1000, afterEofMs: Number(end - eof) / 1000 }))
  process.exit(0)
}

const [runsText = "10", ...names] = process.argv.slice(2)
const clients = names.length > 0 ? names : ["ours", "ours-mcp"]
const dir = mkdtempSync(join(tmpdir(), "teardown-phases-"))
const seen = new Map<string, Array<{ toEofMs: number; afterEofMs: number }>>()
for (let r = 0; r < Number(runsText); r++) {
  for (const name of clients) {
    const [client, flag] = name.split("+")
    const out = execFileSync(process.execPath, [new URL(import.meta.url).pathname, client!], {
      encoding: "utf8",
      env: {
        ...process.env,
        TEARDOWN_CHILD: "1",
        BENCH_EOF_FILE: join(dir, `eof-${r}-${name}`),
        ...(flag === "untracked" ? { BENCH_STDIO_UNTRACKED: "1" } : {})
      }
    })
    seen.set(name, [...(seen.get(name) ?? []), JSON.parse(out.trim().split("\n").at(-1)!)])
  }
}
const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!
for (const [name, xs] of seen) {
  const to = median(xs.map((x) => x.toEofMs)), after = median(xs.map((x) => x.afterEofMs))
  console.log(`${name.padEnd(22)} close → stdin end at the server ${to.toFixed(2).padStart(6)} ms   → close returns ${after.toFixed(2).padStart(6)} ms`)
}
