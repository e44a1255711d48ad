/**
 * What V8's scavenges promote when each unit of work makes an object literal
 * with a getter (a fresh closure each time), against the same getter on a
 * class's prototype: plain Node, no project code. Each of `count` units
 * makes a ~1 KB payload, and the binding object reading it lazily; 32 units
 * stay live at a time (as 32 requests in flight), then each is dropped.
 * Runs each way in a child under `--trace-gc-nvp` and sums what the
 * scavenges promoted to the old generation.
 *
 *   npx node bench/profile/getter-literal-promotion.ts [count=200000]
 */
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"

const [modeOrCount, countText] = process.argv.slice(2)

class LazyBinding {
  #digest: string | undefined
  readonly #payload: { readonly items: Array<number> }
  readonly method: string
  constructor(method: string, payload: { readonly items: Array<number> }) {
    this.method = method
    this.#payload = payload
  }
  get digest(): string {
    return this.#digest ??= String(this.#payload.items.length)
  }
}

const work = (mode: string, count: number) => {
  const live: Array<{ readonly method: string; readonly digest: string }> = new Array(32)
  let sink = 0
  for (let i = 0; i < count; i++) {
    const payload = { items: Array.from({ length: 120 }, (_, k) => k + i) }
    let digest: string | undefined
    live[i % 32] = mode === "literal"
      ? {
        method: "tools/call",
        get digest() {
          return digest ??= String(payload.items.length)
        }
      }
      : new LazyBinding("tools/call", payload)
    sink += live[(i + 1) % 32]?.method.length ?? 0
  }
  return sink
}

if (modeOrCount === "literal" || modeOrCount === "class") {
  work(modeOrCount, Number(countText))
} else {
  const count = Number(modeOrCount ?? "200000")
  for (const mode of ["literal", "class"]) {
    const run = spawnSync(process.execPath, ["--trace-gc-nvp", fileURLToPath(import.meta.url), mode, String(count)], {
      encoding: "utf8"
    })
    let scavenges = 0, promoted = 0
    for (const line of run.stdout.split("\n")) {
      const m = / gc=s .*? promoted=(\d+)/.exec(line)
      if (m !== null) {
        scavenges++
        promoted += Number(m[1])
      }
    }
    console.log(JSON.stringify({ mode, count, scavenges, promotedBytesPerUnit: Math.round(promoted / count) }))
  }
}
