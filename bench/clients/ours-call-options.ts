/**
 * Ladder step: this project's stdio client transport sent what `McpClient`
 * sends per call and nothing more of it: a fresh progress token in `_meta`, a
 * timeout (one `Duration` for every call) and an `onDeadline` hook that keeps
 * the restart. Between `ours` (the bare request) and `ours-mcp-request`, it
 * weighs those options apart from the rest of `McpClient`'s call.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { driveEffect, holdEffect } from "./effect-drive.ts"
import { loadClientTransport, loadNodeSpawner, loadStdioClientTransport } from "../our-modules.ts"
import type { BenchClient } from "./types.ts"

const { ClientTransport } = await loadClientTransport()
const StdioClientTransport = await loadStdioClientTransport()
const NodeSpawner = await loadNodeSpawner()

export const make = async (command: string, args: ReadonlyArray<string>): Promise<BenchClient> => {
  const runtime = ManagedRuntime.make(
    StdioClientTransport.layer({ command, args }).pipe(Layer.provide(NodeSpawner.layer))
  )
  const transport = await runtime.runPromise(ClientTransport)
  await runtime.runPromise(
    transport.request("initialize", {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "bench-ours-call-options", version: "1.0.0" }
    }).pipe(Effect.andThen(transport.notify("notifications/initialized")))
  )
  const params = { name: "echo", arguments: { text: "hi" } }
  const timeout = Duration.seconds(60)
  let token = 0
  // Where McpClient keeps the restart, for the progress that may come.
  const watch: { restart: (() => void) | undefined } = { restart: undefined }
  const onDeadline = (restart: () => void) => void (watch.restart = restart)
  const callTool = Effect.suspend(() =>
    transport.request("tools/call", { ...params, _meta: { progressToken: ++token } }, { timeout, onDeadline })
  )
  const ping = transport.request("ping")
  return {
    callTool: () => runtime.runPromise(callTool),
    ping: () => runtime.runPromise(ping),
    drive: (op, total, concurrency) => runtime.runPromise(driveEffect(op === "ping" ? ping : callTool, total, concurrency)),
    holdAsFibers: (count) => runtime.runPromise(holdEffect(callTool, count)),
    close: () => runtime.dispose()
  }
}
