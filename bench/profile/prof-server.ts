/**
 * Runs a benchmark server under `--cpu-prof`, for requesters that spawn a
 * server script themselves:
 *
 *   PROF_TARGET=bench/servers/ours-handler.ts PROF_DIR=/tmp/prof \
 *     npx node bench/server-requester.ts bench/profile/prof-server.ts callTool 32 30000
 *
 * (The server's CPU figure then measures this wrapper, not the server: use it for the profile only.)
 */
import { spawn } from "node:child_process"
import { resolve } from "node:path"

const target = resolve(process.env.PROF_TARGET ?? "bench/servers/ours-mcp.ts")
const dir = process.env.PROF_DIR ?? "/tmp/prof-server"
// PROF_FLAGS replaces the profiler flags, e.g. `--import=./bench/profile/count-stdout.ts`.
const flags = process.env.PROF_FLAGS?.split(" ") ?? ["--cpu-prof", `--cpu-prof-dir=${dir}`]
const child = spawn(process.execPath, [...flags, target], { stdio: "inherit" })
child.on("exit", (code) => process.exit(code ?? 0))
