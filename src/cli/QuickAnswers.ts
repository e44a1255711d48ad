/**
 * What the program answers without loading itself: `--version` and the root's
 * `--help`, exactly as effect/cli prints them (a test compares them with the
 * program's own, which `--verbose --help` still prints).
 */
import { VERSION } from "./Version.ts"

/** The root's help page; keep it in step with Subcommands and Output's global flags. */
export const ROOT_HELP = `DESCRIPTION
  Inspect, call and ping MCP servers over stdio, Streamable HTTP or legacy SSE

USAGE
  effect-mcp-transport <subcommand> [flags]

GLOBAL FLAGS
  --help, -h                                                                Show help information
  --version, -v                                                             Show version information
  --wizard                                                                  Start wizard mode for a command
  --completions <bash|zsh|fish|powershell|sh|pwsh>                          Print shell completion script (choices: bash, zsh, fish, powershell, sh, pwsh)
  --json                                                                    Print one JSON document on stdout instead of human-readable text
  --verbose                                                                 Log transport details and the server's stderr; print full error details
  --log-level <debug|info|notice|warning|error|critical|alert|emergency>    Ask the server for its log messages from this level up and print them on stderr (choices: debug, info, notice, warning, error, critical, alert, emergency)
  --output, -o FILE                                                         Write the command's result to this file (replaced) instead of stdout

SUBCOMMANDS
  inspect     Connect (discovery or handshake), show the era and protocol, and list what the server offers
  list        List the server's tools, resources, resource templates or prompts (every page), one a line
  call        Call a tool and print its result; progress and task status are shown on stderr, Ctrl-C cancels the call
  task        Show or cancel a task a tool call became, by the id call printed (tasks/get, tasks/cancel)
  read        Read a resource (resources/read) and print its contents
  prompt      Get a prompt (prompts/get) with its arguments and print its messages
  complete    Ask for completions of a prompt's or resource template's argument (completion/complete) and print them, one a line
  lint        Check the server's tools: JSON Schema 2020-12 structure of inputSchema and outputSchema, names, descriptions, x-mcp-header
  ping        Measure round trips: N pings, then min / median / p99 / max in milliseconds
  serve       Run the example MCP server (echo, add, countdown) over stdio or Streamable HTTP, in both protocol eras unless --eras says otherwise
  bridge      Expose an MCP server over the other transport: a stdio server over HTTP, or a URL over stdio
  logout      Remove stored OAuth sign-ins (one server, or all with --all); the next --auth run signs in again
`

/** The text to print for `argv`, or undefined when the program must run. */
export const answer = (argv: ReadonlyArray<string>): string | undefined => {
  if (argv.length !== 1) return undefined
  if (argv[0] === "--version" || argv[0] === "-v") return `effect-mcp-transport v${VERSION}\n`
  if (argv[0] === "--help" || argv[0] === "-h") return ROOT_HELP
  return undefined
}
