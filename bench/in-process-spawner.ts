/**
 * A `ChildProcessSpawner` whose "child" is an in-process responder behind the
 * same Node stream adapters the real spawner uses (a PassThrough piped into
 * another for stdout, `NodeSink.fromWritable` for stdin). It answers every
 * request one event-loop turn later, as a real server would: `initialize`
 * with a fixed result, `tools/call` with a small text result, anything else
 * with `{}`; with `progress` n, a `tools/call` carrying a progress token gets
 * n `notifications/progress` (1..n, total n) first, in the same chunk. With
 * `stateless`, a request whose `_meta` names a protocol version is answered as
 * the 2026-07-28 revision answers (as bench/raw-responder.ts `--stateless`):
 * `resultType` and the server's identity in `_meta`, and `server/discover`
 * offering that revision. For
 * measuring a client's own cost without pipes or a second process
 * (`bench/in-process.ts`, `bench/profile/mcp-layer.ts`, `bench/profile/call-layer.ts`).
 */
import * as NodeSink from "@effect/platform-node/NodeSink"
import * as NodeStream from "@effect/platform-node/NodeStream"
import { Effect, Latch } from "effect"
import { ChildProcessSpawner } from "effect/process"
import { PassThrough } from "node:stream"

const INIT_RESULT = {
  protocolVersion: "2025-11-25",
  capabilities: { tools: {} },
  serverInfo: { name: "in-process", version: "1.0.0" }
}
const TOOL_RESULT = { content: [{ type: "text", text: "ok" }] }
const MODERN_VERSION = "2026-07-28"
const modern = <A extends object>(result: A) => ({
  ...result,
  resultType: "complete",
  _meta: { "io.modelcontextprotocol/serverInfo": INIT_RESULT.serverInfo }
})
const MODERN_RESULTS: Record<string, unknown> = {
  "server/discover": modern({ supportedVersions: [MODERN_VERSION], capabilities: { tools: {} }, ttlMs: 0, cacheScope: "private" }),
  "tools/call": modern(TOOL_RESULT)
}

/** Where a responder adds up the time its own work took (parsing requests, writing answers), in ms. */
export interface ResponderTime {
  ms: number
}

/**
 * The responder's two ends: write requests to `stdin`, read answers from `stdout`;
 * `time`, if given, adds up what the responder itself costs (see `ResponderTime`).
 */
export const makeLink = (progress = 0, stateless = false, time?: ResponderTime) => {
  const stdin = new PassThrough()
  const childStdout = new PassThrough()
  const stdout = new PassThrough()
  childStdout.pipe(stdout)
  let pending = ""
  stdin.setEncoding("utf8")
  stdin.on("data", (chunk: string) => {
    const t0 = time === undefined ? 0 : performance.now()
    pending += chunk
    let out = ""
    let start = 0
    let nl: number
    while ((nl = pending.indexOf("\n", start)) !== -1) {
      const msg = JSON.parse(pending.slice(start, nl)) as {
        id?: number
        method?: string
        params?: { _meta?: { progressToken?: unknown; "io.modelcontextprotocol/protocolVersion"?: string } }
      }
      start = nl + 1
      if (msg.id === undefined || msg.method === undefined) continue
      const meta = msg.params?._meta
      const token = meta?.progressToken
      if (progress > 0 && msg.method === "tools/call" && token !== undefined) {
        const head = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":${JSON.stringify(token)},"progress":`
        for (let i = 1; i <= progress; i++) out += `${head}${i},"total":${progress}}}\n`
      }
      const result = stateless && meta?.["io.modelcontextprotocol/protocolVersion"] !== undefined
        ? MODERN_RESULTS[msg.method] ?? modern({})
        : msg.method === "initialize"
        ? INIT_RESULT
        : msg.method === "tools/call"
        ? TOOL_RESULT
        : {}
      out += JSON.stringify({ jsonrpc: "2.0", id: msg.id, result }) + "\n"
    }
    pending = pending.slice(start)
    if (time !== undefined) time.ms += performance.now() - t0
    if (out.length > 0) setImmediate(() => childStdout.write(out))
  })
  return { stdin, stdout, end: () => childStdout.end() }
}

const ended = () => NodeStream.fromReadable({ evaluate: () => new PassThrough().end(), onError: (e) => e as never })

/** A spawner whose every "child" is a new in-process responder (see `makeLink`). */
export const makeSpawner = (progress = 0, stateless = false, time?: ResponderTime) => ChildProcessSpawner.make(() =>
  Effect.sync(() => {
    const link = makeLink(progress, stateless, time)
    const exited = Latch.makeUnsafe(false)
    link.stdin.on("end", () => {
      link.end()
      exited.openUnsafe()
    })
    return ChildProcessSpawner.makeHandle({
      pid: ChildProcessSpawner.ProcessId(-1),
      exitCode: Effect.as(exited.await, ChildProcessSpawner.ExitCode(0)),
      isRunning: Effect.sync(() => !exited.isOpen()),
      kill: () => Effect.sync(() => link.stdin.end()),
      stdin: NodeSink.fromWritable({ evaluate: () => link.stdin, onError: (e) => e as never }),
      stdout: NodeStream.fromReadable({ evaluate: () => link.stdout, onError: (e) => e as never }),
      stderr: ended(),
      all: ended(),
      getInputFd: () => NodeSink.fromWritable({ evaluate: () => new PassThrough(), onError: (e) => e as never }),
      getOutputFd: () => ended(),
      unref: Effect.succeed(Effect.void)
    })
  })
)

export const spawner = makeSpawner()
