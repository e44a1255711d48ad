/**
 * What V8's scavenges promote when each unit of work makes a function with
 * a hidden class of its own: an object literal with a getter (a fresh
 * closure each time), or a generator function made and called per unit (as
 * `Effect.gen(function*() {…})` inside a function does), against the same
 * getter on a class's prototype and one module-level generator function
 * (`Effect.fnUntraced`): plain Node, no project code. Each of `count` units
 * makes a ~1 KB payload that the getter or generator reads; 32 units stay
 * live at a time (as 32 requests in flight), then each is dropped. Runs each
 * way in a child under `--trace-gc-nvp` and sums what the scavenges
 * promoted to the old generation.
 *
 *   npx node bench/profile/own-hidden-class-promotion.ts [count=200000]
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

function* shared(payload: { readonly items: Array<number> }): Generator<number, number> {
  yield payload.items.length
  return 1
}

const MODES = ["literal", "class", "generator-closure", "generator-shared"]

const work = (mode: string, count: number) => {
  const live: Array<unknown> = new Array(32)
  let sink = 0
  for (let i = 0; i < count; i++) {
    const payload = { items: Array.from({ length: 120 }, (_, k) => k + i) }
    if (mode.startsWith("generator")) {
      const run = mode === "generator-closure"
        ? (function*() {
          yield payload.items.length
          return 1
        })()
        : shared(payload)
      sink += run.next().value
      live[i % 32] = run
      continue
    }
    let digest: string | undefined
    live[i % 32] = mode === "literal"
      ? {
        method: "tools/call",
        get digest() {
          return digest ??= String(payload.items.length)
        }
      }
      : new LazyBinding("tools/call", payload)
    sink += (live[(i + 1) % 32] as { readonly method?: string } | undefined)?.method?.length ?? 0
  }
  return sink
}

if (modeOrCount !== undefined && MODES.includes(modeOrCount)) {
  work(modeOrCount, Number(countText))
} else {
  const count = Number(modeOrCount ?? "200000")
  for (const mode of MODES) {
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
