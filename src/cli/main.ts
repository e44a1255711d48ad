#!/usr/bin/env node
/**
 * The command-line program's entry (package.json "bin"). It refuses to start
 * on a Node.js older than package.json "engines" with one line on stderr and
 * exit code 1, and only then loads the program: a static import would load
 * undici first, which throws on an old Node before any check could run.
 */
import { refusalForThisNode } from "./NodeFloor.ts"

const refused = refusalForThisNode()
if (refused === undefined) {
  await import("./program.ts")
} else {
  process.stderr.write(`${refused}\n`)
  process.exitCode = 1
}
