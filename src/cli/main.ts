#!/usr/bin/env node
/**
 * The command-line program's entry (package.json "bin"). It refuses to start
 * on a Node.js older than package.json "engines" with one line on stderr and
 * exit code 1; it answers `--version` and the root's `--help` itself; and only
 * then turns on Node's compile cache and loads the program: a static import
 * would load undici first, which throws on an old Node before any check could
 * run, and loading effect and the commands takes far longer than either answer.
 */
import * as Module from "node:module"
import { refusalForThisNode } from "./NodeFloor.ts"
import * as QuickAnswers from "./QuickAnswers.ts"

const refused = refusalForThisNode()
const answer = refused === undefined ? QuickAnswers.answer(process.argv.slice(2)) : undefined
if (refused !== undefined) {
  process.stderr.write(`${refused}\n`)
  process.exitCode = 1
} else if (answer !== undefined) {
  process.stdout.write(answer)
} else {
  // Node keeps the code it compiles for the program (some 330 modules) on disk, in NODE_COMPILE_CACHE or
  // else under the temporary folder, and a later start reads it instead of compiling again (about a tenth
  // of a call's CPU and wall time); NODE_DISABLE_COMPILE_CACHE=1 turns it off.
  Module.enableCompileCache?.()
  await import("./program.ts")
}
