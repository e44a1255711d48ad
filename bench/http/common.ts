/**
 * What every server and client of the HTTP and large-message workloads
 * shares: the tool's result, command-line flags, and the peak-RSS report a
 * server process leaves behind when it exits.
 */
import { writeFileSync } from "node:fs"

export const PROTOCOL_VERSION = "2025-11-25"
export const TOOL_ARGS = { name: "echo", arguments: { text: "hi" } } as const

/** `{ content: [{ type: "text", text }] }`: "ok", or `bytes` of "x" for the large-message workload. */
export const toolResult = (bytes: number) => ({
  content: [{ type: "text" as const, text: bytes > 0 ? "x".repeat(bytes) : "ok" }]
})

export const flag = (name: string, fallback: string): string => {
  const at = process.argv.indexOf(`--${name}`)
  return at >= 0 && process.argv[at + 1] !== undefined ? process.argv[at + 1]! : fallback
}

/** `json`: answers as one JSON body; `sse`: every answer as an SSE stream. */
export type HttpMode = "json" | "sse"
export const modeFlag = (): HttpMode => (flag("mode", "json") === "sse" ? "sse" : "json")

/**
 * With `BENCH_RSS_FILE` set, the process writes its peak RSS in bytes to that
 * file as it exits, so the parent can read a server's peak without polling.
 */
export const reportPeakRssOnExit = () => {
  const file = process.env.BENCH_RSS_FILE
  if (file === undefined || file === "") return
  process.on("exit", () => writeFileSync(file, String(process.resourceUsage().maxRSS * 1024)))
}

/** The last line of a listening server's stdout: `listening <url>`. */
export const announce = (url: string) => process.stdout.write(`listening ${url}\n`)

/**
 * `notifications/progress` per `tools/call` that carries a progress token:
 * `--progress n`, else BENCH_PROGRESS, else 0.
 */
export const progressPerCall = (): number => Number(flag("progress", process.env.BENCH_PROGRESS ?? "0"))

/** The SSE events of `n` progress notifications for `token` (progress 1..n, total n). */
export const progressEvents = (token: unknown, n: number): string => {
  const head = `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":${
    JSON.stringify(token)
  },"progress":`
  let events = ""
  for (let i = 1; i <= n; i++) events += `${head}${i},"total":${n}}}\n\n`
  return events
}
