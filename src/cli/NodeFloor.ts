/**
 * The oldest Node.js the CLI runs on, read from package.json "engines".node
 * (`>=X.Y.Z`). main.ts checks it before it loads anything else: on an older
 * Node, undici (behind effect's HTTP client) throws while loading, with a
 * stack trace that does not say what is wrong. So this module imports only
 * Node built-ins.
 */
import { readFileSync } from "node:fs"

type Version = readonly [major: number, minor: number, patch: number]

/** `22.19.0` or `v22.19.0` (a pre-release or build suffix is ignored); undefined otherwise. */
export const parseVersion = (text: string): Version | undefined => {
  const match = /^v?(\d+)\.(\d+)\.(\d+)/.exec(text.trim())
  return match === null ? undefined : [Number(match[1]), Number(match[2]), Number(match[3])]
}

/** The floor of an engines range of the form `>=X.Y.Z`; undefined for any other form. */
export const parseFloor = (range: string): Version | undefined => {
  const match = /^>=\s*(v?\d+\.\d+\.\d+)$/.exec(range.trim())
  return match === null ? undefined : parseVersion(match[1]!)
}

export const isOlder = (version: Version, floor: Version): boolean => {
  for (let i = 0; i < 3; i++) {
    if (version[i]! !== floor[i]!) return version[i]! < floor[i]!
  }
  return false
}

/**
 * The line to print when `current` (e.g. `process.versions.node`) is older
 * than the `range` floor; undefined when it is not, or when either cannot be
 * read (then the program runs rather than refusing on a guess).
 */
export const refusal = (program: string, range: string, current: string): string | undefined => {
  const floor = parseFloor(range)
  const version = parseVersion(current)
  if (floor === undefined || version === undefined || !isOlder(version, floor)) return undefined
  return `${program}: needs Node.js ${floor.join(".")} or newer (package.json engines: "${range}"); this is Node.js ${version.join(".")}`
}

interface Manifest {
  readonly name?: unknown
  readonly engines?: { readonly node?: unknown }
}

/** Checks the running Node against package.json, which sits two levels up from both src/cli and dist/cli. */
export const refusalForThisNode = (): string | undefined => {
  let manifest: Manifest
  try {
    manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as Manifest
  } catch {
    return undefined
  }
  const range = manifest.engines?.node
  const name = typeof manifest.name === "string" ? manifest.name : "effect-mcp-transport"
  return typeof range === "string" ? refusal(name, range, process.versions.node) : undefined
}
