/**
 * Ladder step: this project's stdio client transport sent what `McpClient`
 * sends per call and nothing more of it: a fresh progress token in `_meta`, a
 * timeout (one `Duration` for every call) and an `onDeadline` hook that keeps
 * the restart. Between `ours` (the bare request) and `ours-mcp-request`, it
 * weighs those options apart from the rest of `McpClient`'s call.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { runtimeClient } from "./effect-drive.ts"
import { open } from "./ours.ts"
import type { BenchClient } from "./types.ts"

export const make = async (command: string, args: ReadonlyArray<string>): Promise<BenchClient> => {
  const { runtime, transport } = await open(command, args, "bench-ours-call-options")
  const params = { name: "echo", arguments: { text: "hi" } }
  const timeout = Duration.seconds(60)
  let token = 0
  // Where McpClient keeps the restart, for the progress that may come.
  const watch: { restart: (() => void) | undefined } = { restart: undefined }
  const onDeadline = (restart: () => void) => void (watch.restart = restart)
  return runtimeClient(runtime, {
    callTool: Effect.suspend(() =>
      transport.request("tools/call", { ...params, _meta: { progressToken: ++token } }, { timeout, onDeadline })
    ),
    ping: transport.request("ping")
  })
}
