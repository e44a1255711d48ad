/**
 * What the stdio client writes to the server's stdin: requests started in
 * separate event-loop callbacks (as HTTP requests a bridge forwards arrive)
 * after a write, and before the server's next output, share one write.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import { testServerPath } from "../fixtures/stdio-helpers.ts"


/** Resumes from an event-loop callback of its own. */
const ownCallback = Effect.callback<void>((resume) => void setImmediate(() => resume(Effect.void)))

describe("stdio client stdin batching", { timeout: 30_000 }, () => {
  it.live("calls started from separate callbacks after a write reach the server in one read", () =>
    Effect.gen(function*() {
      const client = yield* McpClient.connect(StdioClientTransport.make({ command: process.execPath, args: [testServerPath] }))
      const reads = yield* Effect.forEach(
        Array.from({ length: 8 }),
        () =>
          Effect.andThen(ownCallback, client.request("test/read")).pipe(
            Effect.map((result) => (result as { read: number }).read)
          ),
        { concurrency: "unbounded" }
      )
      expect(reads).toHaveLength(8)
      expect(new Set(reads).size).toBe(1)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})
