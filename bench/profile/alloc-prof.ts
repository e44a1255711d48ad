/**
 * Where a process allocates, objects since collected included (what
 * `--heap-prof` leaves out: it keeps only what is still alive): V8's
 * sampling heap profiler, started `ALLOC_DELAY_MS` (default 4000) after
 * start-up so a warm-up is left out, written to `ALLOC_OUT` (default
 * /tmp/alloc.heapprofile) when the process exits. Summarize it with
 * alloc-summarize.ts.
 *
 *   SERVER_FLAGS="--import=./bench/profile/alloc-prof.ts" \
 *     npx node bench/profile/http-server-era-drive.ts stateless 40000 32 x
 */
import { writeFileSync } from "node:fs"
import { Session } from "node:inspector"

const session = new Session()
session.connect()
let started = false
setTimeout(() => {
  session.post("HeapProfiler.startSampling", {
    samplingInterval: 1024,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true
  }, (error) => {
    if (error === null) started = true
  })
}, Number(process.env.ALLOC_DELAY_MS ?? 4000)).unref()
// The main thread's session answers at once, so the profile is written before the process ends.
process.on("exit", () => {
  if (!started) return
  session.post("HeapProfiler.stopSampling", (error, result) => {
    if (error === null) writeFileSync(process.env.ALLOC_OUT ?? "/tmp/alloc.heapprofile", JSON.stringify(result.profile))
  })
})
