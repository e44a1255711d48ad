/**
 * The conformance suite's frozen requirement lists
 * (`requirements/<revision>.yaml` in `@modelcontextprotocol/conformance`):
 * which server and client scenarios a protocol revision requires, and which
 * ones the suite runs but never scores (with the reason: `extension`,
 * `pending`, `added-after-release`).
 *
 * The files are a fixed, flat shape (two lists of names and a list of
 * `scenario`/`leg`/`reason` entries), read here line by line so the runner
 * needs no YAML parser.
 */
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

/** The revisions the runner scores against, oldest first. */
export const revisions = ["2025-11-25", "2026-07-28"] as const
export type Revision = typeof revisions[number]

export type Leg = "server" | "client"

export interface NotScored {
  readonly scenario: string
  readonly leg: Leg
  readonly reason: string
}

export interface Requirements {
  readonly revision: string
  readonly server: ReadonlyArray<string>
  readonly client: ReadonlyArray<string>
  readonly notScored: ReadonlyArray<NotScored>
}

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const requirementsDir = join(root, "node_modules/@modelcontextprotocol/conformance/requirements")

/** Parses one requirements file's text. */
export const parseRequirements = (revision: string, text: string): Requirements => {
  const server: Array<string> = []
  const client: Array<string> = []
  const notScored: Array<{ scenario: string; leg: Leg; reason: string }> = []
  let section: "server" | "client" | "not_scored" | undefined
  for (const raw of text.split("\n")) {
    const line = raw.replace(/\s+#.*$/, "").replace(/^#.*$/, "")
    if (line.trim() === "") continue
    const top = /^(\w+):\s*$/.exec(line)
    if (top !== null) {
      section = top[1] === "server" || top[1] === "client" || top[1] === "not_scored" ? top[1] : undefined
      continue
    }
    if (section === "server" || section === "client") {
      const item = /^\s+-\s+(\S+)\s*$/.exec(line)
      if (item !== null) (section === "server" ? server : client).push(item[1]!)
    } else if (section === "not_scored") {
      const field = /^\s+(-\s+)?(scenario|leg|reason):\s+(\S+)\s*$/.exec(line)
      if (field === null) continue
      if (field[1] !== undefined) notScored.push({ scenario: "", leg: "server", reason: "" })
      const entry = notScored[notScored.length - 1]
      if (entry === undefined) continue
      if (field[2] === "scenario") entry.scenario = field[3]!
      else if (field[2] === "leg") entry.leg = field[3] === "client" ? "client" : "server"
      else entry.reason = field[3]!
    }
  }
  return { revision, server, client, notScored }
}

/** The installed suite's requirement list for `revision`. */
export const readRequirements = (revision: string): Requirements =>
  parseRequirements(revision, readFileSync(join(requirementsDir, `${revision}.yaml`), "utf8"))

/**
 * The tasks extension's server scenarios the suite runs but only reports as
 * SKIPPED (its harness awaits a rewrite against `subscriptions/listen`), so
 * they can never pass; `notifications/tasks` is covered by our own tests.
 */
export const skippedBySuite: ReadonlySet<string> = new Set(["tasks-status-notifications"])

/**
 * The scenarios of one leg the runner judges: the scored ones plus the
 * not-scored ones we pass anyway (pending, added after the release, and the
 * server's tasks extension scenarios `tasks-*`), without the other protocol
 * extensions (skills, extension auth flows; see `authExtensions` for the
 * latter).
 */
export const inScope = (requirements: Requirements, leg: Leg): ReadonlyArray<string> => {
  const extra = requirements.notScored
    .filter((n) =>
      n.leg === leg &&
      (n.reason !== "extension" || (leg === "server" && n.scenario.startsWith("tasks-") && !skippedBySuite.has(n.scenario)))
    )
    .map((n) => n.scenario)
  return [...requirements[leg], ...extra]
}

/**
 * The client's OAuth extension scenarios (client credentials, DPoP,
 * enterprise-managed authorization, workload identity…): run without a
 * protocol revision, judged as a group of their own. Every list names
 * them; the union is taken, in order of first appearance.
 */
export const authExtensions = (lists: ReadonlyArray<Requirements>): ReadonlyArray<string> => {
  const names = lists.flatMap((requirements) =>
    requirements.notScored
      .filter((n) => n.leg === "client" && n.reason === "extension" && n.scenario.startsWith("auth/"))
      .map((n) => n.scenario)
  )
  return [...new Set(names)]
}
