/**
 * The raw requester's machinery, shared by the raw baseline and its two
 * ladder variants: plain Node, a Map of callbacks by id, one stdin write per
 * tick (a microtask). No validation, no timeouts, no cancellation.
 */
import { spawn } from "node:child_process"
import { PassThrough } from "node:stream"

export interface RawOptions {
  /**
   * Read stdout through a PassThrough on `readable`, as effect's Node spawner
   * hands it over, instead of `data` events on the pipe itself.
   */
  readonly passThrough?: boolean | undefined
}

export interface RawConnection {
  /** Sends a request; `onResult` runs with its result when the response arrives. */
  readonly send: (method: string, params: unknown, onResult: (result: unknown) => void) => void
  readonly notify: (method: string) => void
  readonly close: () => Promise<void>
  /** The server process's id (for its CPU time, memory, exit). */
  readonly pid: number
  /** Lines that were no response: the server's notifications (`notifications/progress` in the sweep). */
  readonly notificationsReceived: () => number
}

export const connect = (command: string, args: ReadonlyArray<string>, options: RawOptions = {}): RawConnection => {
  const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] })
  if (child.pid === undefined) throw new Error(`could not spawn ${command}`)
  const waiting = new Map<number, (result: unknown) => void>()
  let nextId = 0
  let out = ""
  let scheduled = false
  const flush = () => {
    scheduled = false
    child.stdin.write(out)
    out = ""
  }
  const enqueue = (line: string) => {
    out += line
    if (!scheduled) {
      scheduled = true
      queueMicrotask(flush)
    }
  }
  let pending = ""
  let notifications = 0
  const onText = (chunk: string) => {
    pending += chunk
    let start = 0
    let nl: number
    while ((nl = pending.indexOf("\n", start)) !== -1) {
      const msg = JSON.parse(pending.slice(start, nl)) as { id?: number; result: unknown }
      start = nl + 1
      if (msg.id === undefined) {
        notifications++
        continue
      }
      const onResult = waiting.get(msg.id)
      if (onResult !== undefined) {
        waiting.delete(msg.id)
        onResult(msg.result)
      }
    }
    pending = pending.slice(start)
  }
  if (options.passThrough === true) {
    const through = new PassThrough()
    const decoder = new TextDecoder()
    child.stdout.pipe(through)
    through.on("readable", () => {
      let chunk: Buffer | null
      while ((chunk = through.read() as Buffer | null) !== null) onText(decoder.decode(chunk, { stream: true }))
    })
  } else {
    child.stdout.setEncoding("utf8")
    child.stdout.on("data", onText)
  }
  return {
    pid: child.pid,
    notificationsReceived: () => notifications,
    send: (method, params, onResult) => {
      const id = ++nextId
      waiting.set(id, onResult)
      enqueue(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n")
    },
    notify: (method) => enqueue(JSON.stringify({ jsonrpc: "2.0", method }) + "\n"),
    close: () =>
      new Promise<void>((resolve) => {
        child.once("exit", () => resolve())
        child.stdin.end()
      })
  }
}

export const INITIALIZE_PARAMS = {
  protocolVersion: "2025-11-25",
  capabilities: {},
  clientInfo: { name: "raw", version: "1" }
}
export const TOOL_PARAMS = { name: "echo", arguments: { text: "hi" } }

/** What a stateless-revision (2026-07-28) request carries in `_meta` instead of a handshake. */
export const MODERN_META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" }
}
