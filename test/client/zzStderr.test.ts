/**
 * A reader of a stdio server's `stderr` that falls behind keeps the newest
 * lines: a real child writes 600 lines, one per timer tick, while the reader
 * is held at its first; once the child has exited, the reader gets the
 * newest lines up to the last one the child wrote, having lost older ones.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Stream } from "effect"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"

const LINES = 600
const writer = `
let n = 0
const next = () => {
  n++
  process.stderr.write("line " + n + "\\n")
  if (n < ${LINES}) setTimeout(next, 1)
  else process.exit(0)
}
next()
`

describe("StdioClientTransport: a stderr reader that falls behind", () => {
  it.live.each(Array.from({length: 40}, (_, i) => i))("keeps the newest lines %d", () =>
    Effect.gen(function*() {
      const transport = yield* StdioClientTransport.make({
        command: process.execPath,
        args: ["-e", writer],
        stderr: { log: false }
      })
      const gate = yield* Deferred.make<void>()
      const reader = yield* transport.stderr.pipe(
        Stream.mapEffect((line) => Effect.as(Deferred.await(gate), line)),
        Stream.runCollect,
        Effect.forkChild({ startImmediately: true })
      )
      yield* transport.awaitClosed
      yield* Deferred.succeed(gate, undefined)
      const lines = yield* Fiber.join(reader)
      // The read the reader was held in (one line or a few), then consecutive lines up to the last one
      // written: in order, with one gap at most, where the oldest were dropped.
      const numbers = lines.map((line) => Number(line.slice("line ".length)))
      expect(numbers.at(-1)).toBe(LINES)
      const steps = numbers.slice(1).map((n, i) => n - numbers[i]!)
      expect(steps.every((step) => step >= 1)).toBe(true)
      expect(steps.filter((step) => step > 1).length).toBeLessThanOrEqual(1)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)), 30_000)
})
