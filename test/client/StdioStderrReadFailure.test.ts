/**
 * A read of a stdio server's `stderr` that fails keeps what it had read:
 * the lines before the failure, the unfinished last one too, are kept and
 * published, the stream ends, and a warning says why the rest is missing.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Logger, PlatformError, Stream } from "effect"
import * as StdioProcess from "../../src/client/internal/StdioProcess.ts"

const options = {
  command: "server",
  stderrTailLines: 20,
  stderrMaxLineBytes: 65_536,
  logStderr: false
} as StdioProcess.Options

describe("StdioProcess: a failed stderr read", () => {
  it.effect("keeps the lines read before it, ends the stream and logs a warning", () =>
    Effect.gen(function*() {
      const warnings: Array<string> = []
      const source = Stream.make(new TextEncoder().encode("first\nsecond\nunfinis")).pipe(
        Stream.concat(Stream.fail(PlatformError.systemError({
          _tag: "Unknown",
          module: "ChildProcess",
          method: "fromReadable(stderr)",
          description: "read failed"
        })))
      )
      const kept = yield* StdioProcess.keepStderr(source, options, 42).pipe(
        Effect.provide(Logger.layer([Logger.make(({ logLevel, message }) => {
          if (logLevel === "Warn") warnings.push(String(Array.isArray(message) ? message[0] : message))
        })]))
      )
      const lines = yield* Stream.runCollect(kept.lines)
      yield* kept.done
      expect(lines).toEqual(["first", "second", "unfinis"])
      expect(kept.tail()).toEqual(["first", "second", "unfinis"])
      expect(warnings).toEqual(["MCP stdio: reading the server's stderr failed"])
    }).pipe(Effect.scoped))
})
