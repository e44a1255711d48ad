/**
 * One driving process of the throughput measurement (started by
 * throughput.ts with an IPC channel): one worker per instance, each call to
 * the next instance in turn that this driver has no call on (so `slots`
 * drivers hold at most `slots` calls on any instance, the instances' cap).
 * A call refused for want of a slot is sent again to the next instance and
 * counted. Protocol: `{ op: "warm", calls }` → `{ warmed }`;
 * `{ op: "run", calls }` → `{ latencies, refused }` (ms, one per call).
 */
import { Agent } from "node:http"
import { statelessCall } from "./wire.ts"

export interface Setup {
  readonly urls: ReadonlyArray<string>
  readonly waitMs: number
}

export type Command = { readonly op: "warm" | "run"; readonly calls: number }
export type Reply = { readonly warmed: true } | { readonly latencies: Array<number>; readonly refused: number }

const setup = JSON.parse(process.argv[2] ?? "{}") as Setup
const agent = new Agent({ keepAlive: true, maxSockets: setup.urls.length })
const busy = setup.urls.map(() => false)
let next = 0
let refused = 0

const pick = (): number => {
  for (let tried = 0; tried < setup.urls.length; tried++) {
    const i = next++ % setup.urls.length
    if (!busy[i]) return i
  }
  throw new Error("every instance is busy: more workers than instances")
}

const call = async (): Promise<void> => {
  for (;;) {
    const i = pick()
    busy[i] = true
    try {
      const answer = await statelessCall(setup.urls[i]!, agent, "wait", { ms: setup.waitMs })
      if (!answer.refused) return
      refused++
    } finally {
      busy[i] = false
    }
  }
}

const drive = async (calls: number): Promise<Array<number>> => {
  const latencies: Array<number> = []
  let left = calls
  const worker = async () => {
    while (left > 0) {
      left--
      const t0 = performance.now()
      await call()
      latencies.push(performance.now() - t0)
    }
  }
  await Promise.all(setup.urls.map(worker))
  return latencies
}

process.on("message", async (command: Command) => {
  if (command.op === "warm") {
    await drive(command.calls)
    process.send!({ warmed: true } satisfies Reply)
  } else {
    const refused0 = refused
    const latencies = await drive(command.calls)
    process.send!({ latencies, refused: refused - refused0 } satisfies Reply)
  }
})
process.once("disconnect", () => {
  agent.destroy()
  process.exit(0)
})
