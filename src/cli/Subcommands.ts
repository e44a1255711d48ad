/**
 * The program's subcommands, each a module loaded on demand: parsing a
 * command line needs only the subcommand it names, and its module is what
 * loads the client, the server or the OAuth code.
 */
export const DESCRIPTION = "Inspect, call and ping MCP servers over stdio, Streamable HTTP or legacy SSE"

/** In the order the root's help lists them. */
const MODULES = [
  ["inspect", () => import("./commands/inspect.ts")],
  ["list", () => import("./commands/list.ts")],
  ["call", () => import("./commands/call.ts")],
  ["task", () => import("./commands/task.ts")],
  ["read", () => import("./commands/read.ts")],
  ["prompt", () => import("./commands/prompt.ts")],
  ["complete", () => import("./commands/complete.ts")],
  ["lint", () => import("./commands/lint.ts")],
  ["ping", () => import("./commands/ping.ts")],
  ["serve", () => import("./commands/serve.ts")],
  ["bridge", () => import("./commands/bridge.ts")],
  ["logout", () => import("./commands/logout.ts")]
] as const

/** Any of the commands (the union keeps each one's errors and services for the root's type). */
export type AnyCommand = Awaited<ReturnType<typeof MODULES[number][1]>>["command"]

/** The root's flags that take a value: the word after one is not a subcommand. */
const VALUED = new Set(["--log-level", "--output", "-o", "--completions"])

/**
 * The subcommand named on the command line (the first word that is neither a
 * flag nor a flag's value), when it is one of ours.
 */
export const named = (words: ReadonlyArray<string>): string | undefined => {
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!
    if (word.startsWith("-")) {
      if (VALUED.has(word)) i++
      continue
    }
    return MODULES.some(([name]) => name === word) ? word : undefined
  }
  return undefined
}

/** The command of `name` alone, or every command when `name` is none of ours. */
export const load = async (name: string | undefined): Promise<ReadonlyArray<AnyCommand>> => {
  const chosen = MODULES.filter(([n]) => name === undefined || n === name)
  const modules = await Promise.all(chosen.map(([, load]) => load()))
  return modules.map((m): AnyCommand => m.command)
}
