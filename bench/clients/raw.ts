/**
 * The practical limit on the client side: plain Node, a Map of resolvers and
 * one stdin write per tick. No validation, no timeouts, no cancellation.
 */
import { spawn } from "node:child_process"
import type { BenchClient } from "./types.ts"

export const make = async (command: string, args: ReadonlyArray<string>): Promise<BenchClient> => {
  const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] })
  const waiting = new Map<number, (v: unknown) => void>()
  let nextId = 0
  let out = ""
  let scheduled = false
  const flush = () => {
    scheduled = false
    child.stdin.write(out)
    out = ""
  }
  let pending = ""
  child.stdout.setEncoding("utf8")
  child.stdout.on("data", (chunk: string) => {
    pending += chunk
    let start = 0
    let nl: number
    while ((nl = pending.indexOf("\n", start)) !== -1) {
      const msg = JSON.parse(pending.slice(start, nl)) as { id: number; result: unknown }
      start = nl + 1
      const resolve = waiting.get(msg.id)
      if (resolve !== undefined) {
        waiting.delete(msg.id)
        resolve(msg.result)
      }
    }
    pending = pending.slice(start)
  })
  const request = (method: string, params?: unknown) =>
    new Promise<unknown>((resolve) => {
      const id = ++nextId
      waiting.set(id, resolve)
      out += JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n"
      if (!scheduled) {
        scheduled = true
        queueMicrotask(flush)
      }
    })
  await request("initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } })
  out += JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n"
  return {
    callTool: () => request("tools/call", { name: "echo", arguments: { text: "hi" } }),
    ping: () => request("ping"),
    close: () =>
      new Promise<void>((resolve) => {
        child.once("exit", () => resolve())
        child.stdin.end()
      })
  }
}
