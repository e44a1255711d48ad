/**
 * This package's version, read from package.json (two levels up from both
 * src/cli and dist/cli). Only `node:fs`: the entry answers `--version` with it
 * before loading the program.
 */
import * as fs from "node:fs"

export const VERSION: string = (() => {
  try {
    const text = fs.readFileSync(new URL("../../package.json", import.meta.url), "utf8")
    return String((JSON.parse(text) as { version?: unknown }).version ?? "0.0.0")
  } catch {
    return "0.0.0"
  }
})()
