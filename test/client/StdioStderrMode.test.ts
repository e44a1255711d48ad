/**
 * Where a stdio server's stderr goes (`stderr.mode`): read and kept here by
 * default, or straight to this process's own stderr, or nowhere. Where it
 * lands is seen from outside: a client process (test/fixtures/stderr-mode-client.ts)
 * runs each mode, and its own stderr is read here.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { TransportClosed } from "../../src/McpError.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import { testServer } from "../fixtures/stdio-helpers.ts"

const client = fileURLToPath(new URL("../fixtures/stderr-mode-client.ts", import.meta.url))
const lines = ["first line from the server", "second line from the server"]

/** The client process's report (what the transport kept) and its own stderr. */
const runClient = (mode: StdioClientTransport.StdioStderrMode) =>
  Effect.callback<{ readonly kept: { tail: Array<string>; streamed: Array<string> }; readonly stderr: string }, Error>(
    (resume) => {
      const child = execFile(process.execPath, [client, mode], { timeout: 30_000 }, (error, stdout, stderr) => {
        if (error !== null) return resume(Effect.fail(error))
        resume(Effect.succeed({ kept: JSON.parse(stdout.trim().split("\n").pop()!), stderr }))
      })
      return Effect.sync(() => void child.kill("SIGKILL"))
    }
  )

describe("StdioClientTransport: stderr.mode", () => {
  it.live("\"pipe\" (the default) keeps the lines here: tail and stream, nothing on this process's stderr", () =>
    Effect.gen(function*() {
      const { kept, stderr } = yield* runClient("pipe")
      expect(kept).toEqual({ tail: lines, streamed: lines })
      for (const line of lines) expect(stderr).not.toContain(line)
    }))

  it.live("\"inherit\" sends the lines to this process's stderr and keeps none", () =>
    Effect.gen(function*() {
      const { kept, stderr } = yield* runClient("inherit")
      expect(kept).toEqual({ tail: [], streamed: [] })
      expect(stderr).toContain(lines.join("\n"))
    }))

  it.live("\"ignore\" discards the lines", () =>
    Effect.gen(function*() {
      const { kept, stderr } = yield* runClient("ignore")
      expect(kept).toEqual({ tail: [], streamed: [] })
      for (const line of lines) expect(stderr).not.toContain(line)
    }))

  it.live("a server that dies with its stderr not kept: the close carries the exit code and no tail", () =>
    Effect.gen(function*() {
      const t = yield* StdioClientTransport.make(testServer([], { stderr: { mode: "ignore" } }))
      const error = yield* Effect.flip(t.request("test/exit", { code: 3, stderr: ["panic: out of cheese"] }))
      expect(error).toBeInstanceOf(TransportClosed)
      expect(error).toMatchObject({ reason: "process exited", exitCode: 3, stderrTail: [] })
      expect(yield* Stream.runCollect(t.stderr)).toEqual([])
      expect(yield* t.stderrTail).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
})
