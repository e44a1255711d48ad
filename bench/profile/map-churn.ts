/**
 * What a table of requests in flight costs when it lives in the old
 * generation, as a long-lived correlator's does: 32 entries in flight, each
 * a fresh object, one set and one delete per request, some garbage
 * allocated per request as a real one does. Three tables:
 * - `map-steady`: a `Map`, one request ending as the next starts;
 * - `map-batch`: a `Map`, 32 starting, then all 32 ending (answers read in one chunk);
 * - `map-old-values`: `map-steady` with one value made before the table went old;
 * - `ring`: an array of 256 slots indexed by the id's low bits (as `SlotTable`).
 *
 *   npx node --expose-gc bench/profile/map-churn.ts <mode> [requests=2000000]
 *
 * Prints ns per request. Run under `--trace-gc-nvp` to see the bytes each
 * promotes to the old generation.
 */
const [mode = "map-steady", requestsText = "2000000"] = process.argv.slice(2)
const requests = Number(requestsText)
const map = new Map<number, { readonly id: number; readonly parts: Array<number> }>()
const ring = new Array<{ readonly id: number; readonly parts: Array<number> } | undefined>(256).fill(undefined)
const entry = (n: number) => ({ id: n, parts: [1, 2, 3] })
const old = entry(0)
const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error("run with --expose-gc, so that the tables start in the old generation")
gc()
gc()

let id = 0
let garbage = 0
const t0 = performance.now()
if (mode === "map-steady" || mode === "map-old-values") {
  const value = mode === "map-steady" ? entry : () => old
  for (let i = 0; i < 32; i++) map.set(++id, value(id))
  for (let i = 0; i < requests; i++) {
    map.set(++id, value(id))
    garbage += new Array(8).length
    map.delete(id - 32)
  }
} else if (mode === "map-batch") {
  for (let i = 0; i < requests / 32; i++) {
    const first = id + 1
    for (let j = 0; j < 32; j++) {
      map.set(++id, entry(id))
      garbage += new Array(8).length
    }
    for (let j = first; j <= id; j++) map.delete(j)
  }
} else if (mode === "ring") {
  for (let i = 0; i < requests / 32; i++) {
    const first = id + 1
    for (let j = 0; j < 32; j++) {
      ++id
      ring[id & 255] = entry(id)
      garbage += new Array(8).length
    }
    for (let j = first; j <= id; j++) ring[j & 255] = undefined
  }
} else {
  throw new Error(`mode is map-steady, map-batch, map-old-values or ring, not ${mode}`)
}
const ns = ((performance.now() - t0) * 1e6) / requests
console.log(JSON.stringify({ mode, requests, nsPerRequest: Number(ns.toFixed(1)), garbage }))
