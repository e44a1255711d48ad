/**
 * The fleet: instances of one server sharing a Redis (bench/fleet/, each
 * part a script of its own, in a fresh process per run; Redis is a real
 * `redis-server` on a free loopback port, started and stopped by pid):
 * - throughput (bench/fleet/throughput.ts): stateless era, a tool that
 *   waits `BENCH_FLEET_WAIT_MS`, each instance capped at
 *   `BENCH_FLEET_SLOTS` requests at once (`maxStreams`), 1 instance against
 *   3 behind a round-robin driver, on one Redis; target 3 ≥ 2.5× 1
 * - the Redis store's cost against memory, one instance
 *   (bench/fleet/store-cost.ts): latency p50/p99 and the instance's CPU per
 *   request (stateless, and in a handshake-era session) and per SSE event
 *   (progress notifications on a POST stream: through the event log)
 * - Redis memory per handshake-era session (bench/fleet/session-memory.ts),
 *   once per workload run, not per run: `BENCH_FLEET_SESSIONS` sessions
 * - resumption after SIGKILL of the instance holding a GET stream
 *   (bench/fleet/resumption.ts), `BENCH_FLEET_TRIALS` kills per run; left
 *   out (with the reason on stderr) where the fleet cannot follow a stream
 *   across instances yet
 *
 * Environment: BENCH_FLEET_PARTS (throughput,store,memory,resume),
 * BENCH_FLEET_SLOTS (4), BENCH_FLEET_WAIT_MS (20; a list measures the
 * throughput at each, the store's cost at the first), BENCH_FLEET_TOTAL (calls
 * per throughput cell, 2000), BENCH_FLEET_CALLS (per store-cost cell, 400),
 * BENCH_FLEET_EVENTS (per progress stream, 50), BENCH_FLEET_STREAMS (40),
 * BENCH_FLEET_SESSIONS (10,000), BENCH_FLEET_TRIALS (5).
 */
import { loadavg } from "node:os"
import { envList, envNumber, mapLimited, parallelism, runJsonLines, Samples, script } from "../child.ts"
import type * as Resumption from "../fleet/resumption.ts"
import type * as SessionMemory from "../fleet/session-memory.ts"
import type * as StoreCost from "../fleet/store-cost.ts"
import type * as Throughput from "../fleet/throughput.ts"
import { progress } from "../http/harness.ts"
import type { Workload } from "../workload.ts"

const NAME = "fleet"
const PARTS = ["throughput", "store", "memory", "resume"]
const TIMEOUT_MS = 20 * 60_000

export const throughputVariant = (waitMs: number, slots: number) =>
  `stateless tools/call wait ${waitMs} ms, ${slots} slots per instance`

const storeVariant = (kind: StoreCost.Kind, job: StoreCost.Job) => {
  switch (kind) {
    case "stateless request":
      return `stateless tools/call wait ${job.waitMs} ms c${job.concurrency}`
    case "session request":
      return `session tools/call wait ${job.waitMs} ms c${job.concurrency}`
    case "session event":
      return `session progress event (${job.events} per stream, ${job.gapMs} ms apart)`
  }
}

export const workload: Workload = {
  name: "Fleet on Redis",
  targets: [{ workload: NAME, variant: "stateless tools/call *", ours: "3 instances", peer: "1 instance", atLeast: 2.5, metric: "req/s" }],
  run: async ({ runs, smoke }) => {
    const loadBefore = loadavg()
    const parts = envList("BENCH_FLEET_PARTS", PARTS.join(","))
    for (const part of parts) if (!PARTS.includes(part)) throw new Error(`unknown part ${part} (known: ${PARTS.join(", ")})`)
    const slots = smoke ? 2 : envNumber("BENCH_FLEET_SLOTS", 4)
    const waits = envList("BENCH_FLEET_WAIT_MS", "20").map(Number)
    const waitMs = waits[0]!
    const samples = new Samples(NAME)

    const throughput = (run: number, wait: number) => async () => {
      const job: Throughput.Job = {
        slots,
        waitMs: wait,
        total: smoke ? 40 : envNumber("BENCH_FLEET_TOTAL", 2000),
        warmup: smoke ? 10 : 200,
        // Which fleet goes first alternates from run to run.
        sizes: run % 2 === 0 ? [1, 3] : [3, 1]
      }
      const [m] = await runJsonLines<Throughput.Measured>(script("./fleet/throughput.ts"), [JSON.stringify(job)], { timeoutMs: TIMEOUT_MS })
      for (const cell of m!.cells) {
        const impl = cell.instances === 1 ? "1 instance" : `${cell.instances} instances`
        samples.add(throughputVariant(wait, slots), impl, "req/s", cell.rps, cell)
        samples.add(throughputVariant(wait, slots), impl, "server CPU µs/req", cell.serverCpuUs)
        progress(`fleet ${impl}, wait ${wait} ms: ${cell.rps.toFixed(0)} req/s, p50 ${cell.p50.toFixed(1)} ms, p99 ${cell.p99.toFixed(1)} ms, ${cell.serverCpuUs.toFixed(0)} µs CPU/call, ${cell.refused} refused and sent again`)
      }
    }
    const store = (run: number) => async () => {
      const job: StoreCost.Job = {
        concurrency: smoke ? 2 : slots,
        waitMs,
        calls: smoke ? 20 : envNumber("BENCH_FLEET_CALLS", 400),
        events: smoke ? 5 : envNumber("BENCH_FLEET_EVENTS", 50),
        gapMs: 1,
        streams: smoke ? 2 : envNumber("BENCH_FLEET_STREAMS", 40),
        first: run % 2 === 0 ? "memory" : "redis"
      }
      const [m] = await runJsonLines<StoreCost.Measured>(script("./fleet/store-cost.ts"), [JSON.stringify(job)], { timeoutMs: TIMEOUT_MS })
      for (const cell of m!.cells) {
        const variant = storeVariant(cell.kind, job)
        samples.add(variant, cell.store, "ms", cell.p50, cell)
        samples.add(variant, cell.store, cell.kind === "session event" ? "server CPU µs/event" : "server CPU µs/req", cell.serverCpuUs)
        progress(`fleet ${cell.store} ${variant}: p50 ${cell.p50.toFixed(2)} ms, p99 ${cell.p99.toFixed(2)} ms, ${cell.serverCpuUs.toFixed(0)} µs CPU each`)
      }
    }
    const resume = async () => {
      const job: Resumption.Job = {
        trials: smoke ? 1 : envNumber("BENCH_FLEET_TRIALS", 5),
        periodMs: 20,
        before: smoke ? 3 : 10,
        after: smoke ? 3 : 10
      }
      const [m] = await runJsonLines<Resumption.Measured>(script("./fleet/resumption.ts"), [JSON.stringify(job)], { timeoutMs: TIMEOUT_MS })
      if (!m!.available) {
        progress(`fleet resumption not measured: ${m!.reason}`)
      } else {
        for (const trial of m!.trials) {
          samples.add("resume after SIGKILL of the stream's instance", "3 instances", "ms", trial.resumeMs)
          samples.add("notifications lost across the kill", "3 instances", "count", trial.lost)
          samples.add("notifications received twice across the kill", "3 instances", "count", trial.duplicated)
          progress(`fleet resumption: ${trial.resumeMs.toFixed(1)} ms, ${trial.lost} lost, ${trial.duplicated} twice`)
        }
      }
    }
    const memory = async () => {
      const job: SessionMemory.Job = { sessions: smoke ? 50 : envNumber("BENCH_FLEET_SESSIONS", 10_000), concurrency: 16, sample: 200 }
      const [m] = await runJsonLines<SessionMemory.Measured>(script("./fleet/session-memory.ts"), [JSON.stringify(job)], { timeoutMs: TIMEOUT_MS })
      const variant = `Redis used_memory per session (${job.sessions.toLocaleString("en-US")} sessions)`
      samples.add(variant, "redis", "bytes/session", m!.bytesPerSession)
      for (const kind of m!.kinds) samples.add(`MEMORY USAGE per key ${kind.pattern}`, "redis", "bytes/key", kind.bytesPerKey)
      samples.add(variant, "redis", "keys/session", m!.keysPerSession)
      samples.add(variant, "redis", "events/session", m!.eventsPerSession)
      progress(`fleet memory: ${m!.bytesPerSession.toFixed(0)} bytes per session, ${m!.keysPerSession} keys and ${m!.eventsPerSession.toFixed(1)} events per session; ${m!.kinds.map((k) => `${k.pattern} ×${k.perSession}: ${k.bytesPerKey.toFixed(0)} B`).join(", ")}`)
    }

    // Runs outermost, so that a run's parts are measured close in time; memory once, last.
    const tasks: Array<() => Promise<void>> = []
    for (let run = 0; run < runs; run++) {
      if (parts.includes("throughput")) for (const wait of waits) tasks.push(throughput(run, wait))
      if (parts.includes("store")) tasks.push(store(run))
      if (parts.includes("resume")) tasks.push(resume)
    }
    if (parts.includes("memory")) tasks.push(memory)
    await mapLimited(tasks, parallelism(smoke), (task) => task())
    progress(`fleet: load average ${loadBefore.map((l) => l.toFixed(1)).join(" / ")} before, ${loadavg().map((l) => l.toFixed(1)).join(" / ")} after`)
    return samples.rows()
  }
}
