/**
 * `@modelcontextprotocol/server-everything` as a child process, in its
 * `streamableHttp` (endpoint /mcp) or `sse` (GET /sse, POST /message) mode.
 * It reads its port from `PORT`; we hand it a free one and wait for the line
 * that says it listens. The process belongs to the scope.
 */
import { Effect, type Scope, Stream } from "effect"
import { ChildProcess, type ChildProcessSpawner } from "effect/process"
import * as Net from "node:net"
import { fileURLToPath } from "node:url"
import * as AwaitableLog from "../../fixtures/awaitable-log.ts"

const ENTRY = fileURLToPath(
  new URL("../../../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url)
)

export interface Everything {
  readonly origin: string
  /** Everything the server printed (stdout and stderr), line by line. */
  readonly output: () => ReadonlyArray<string>
  readonly waitForLine: (predicate: (line: string) => boolean) => Effect.Effect<string>
}

const freePort = Effect.callback<number>((resume) => {
  const probe = Net.createServer()
  probe.listen(0, "127.0.0.1", () => {
    const port = (probe.address() as Net.AddressInfo).port
    probe.close(() => resume(Effect.succeed(port)))
  })
})

export const start = (
  mode: "streamableHttp" | "sse"
): Effect.Effect<Everything, unknown, Scope.Scope | ChildProcessSpawner.ChildProcessSpawner> =>
  Effect.gen(function*() {
    const port = yield* freePort
    const handle = yield* ChildProcess.make(process.execPath, [ENTRY, mode], {
      env: { PORT: String(port) },
      extendEnv: true,
      forceKillAfter: "2 seconds"
    })
    const output = AwaitableLog.make()
    yield* handle.all.pipe(
      Stream.decodeText(),
      Stream.splitLines,
      Stream.runForEach((line) => Effect.sync(() => output.add(line))),
      Effect.ignore,
      Effect.forkScoped
    )
    const waitForLine = output.waitFor
    yield* waitForLine((line) => line.includes(`port ${port}`)).pipe(
      Effect.timeoutOrElse({
        duration: "20 seconds",
        orElse: () => Effect.fail(new Error(`server-everything did not start:\n${output.all().join("\n")}`))
      })
    )
    return { origin: `http://127.0.0.1:${port}`, output: output.all, waitForLine }
  })
