/**
 * Checks an import graph against boundary rules: which folders may import
 * which, and no cycles. The rules themselves live in boundaryRules.ts; this
 * module only applies them, so it can be tested on a synthetic tree.
 *
 * A finding that is listed as known is tolerated; a known entry that no
 * longer occurs is itself a failure, so the list can only shrink.
 */
import type { ImportEdge, ImportGraph } from "./importGraph.ts"

/** Paths relative to the repository, `*` within one folder, `**` across folders. */
export type Glob = string

export interface Rule {
  readonly id: string
  /** The rule as a sentence, quoted in failures. */
  readonly says: string
  readonly from: ReadonlyArray<Glob>
  readonly fromExcept?: ReadonlyArray<Glob>
  readonly to: ReadonlyArray<Glob>
  readonly toExcept?: ReadonlyArray<Glob>
}

/** The id under which import cycles are reported and listed. */
export const NO_CYCLES = "no-cycles"

export type KnownViolation =
  | { readonly rule: string; readonly from: string; readonly to: string; readonly reason: string }
  | { readonly rule: typeof NO_CYCLES; readonly cycle: ReadonlyArray<string>; readonly reason: string }

export interface Finding {
  /** Identifies the finding across runs: rule plus files, not line numbers. */
  readonly key: string
  readonly message: string
}

const globCache = new Map<Glob, RegExp>()

const globToRegExp = (glob: Glob): RegExp => {
  let cached = globCache.get(glob)
  if (cached === undefined) {
    const source = glob
      .split(/(\*\*\/|\*\*|\*)/)
      .map((part) =>
        part === "**/" ? "(?:.*/)?" : part === "**" ? ".*" : part === "*" ? "[^/]*" : part.replace(/[.+?^${}()|[\]\\]/g, "\\$&")
      )
      .join("")
    cached = new RegExp(`^${source}$`)
    globCache.set(glob, cached)
  }
  return cached
}

export const matches = (path: string, globs: ReadonlyArray<Glob> | undefined): boolean =>
  globs !== undefined && globs.some((glob) => globToRegExp(glob).test(path))

const edgeKey = (rule: string, from: string, to: string): string => `${rule} ${from} -> ${to}`
const cycleKey = (members: ReadonlyArray<string>): string => `${NO_CYCLES} ${[...members].sort().join(" ")}`

const knownKey = (known: KnownViolation): string =>
  "cycle" in known ? cycleKey(known.cycle) : edgeKey(known.rule, known.from, known.to)

const ruleFinding = (rule: Rule, edge: ImportEdge): Finding => ({
  key: edgeKey(rule.id, edge.from, edge.to),
  message: `${edge.from}:${edge.line} imports "${edge.specifier}" (${edge.to}), which breaks rule ${rule.id}: ${rule.says}`
})

/** Strongly connected components with more than one file, or a file importing itself (Tarjan). */
const cyclicComponents = (files: ReadonlyArray<string>, next: ReadonlyMap<string, ReadonlyArray<string>>): Array<Array<string>> => {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const components: Array<Array<string>> = []
  const visit = (file: string): void => {
    index.set(file, index.size)
    low.set(file, index.get(file)!)
    stack.push(file)
    onStack.add(file)
    for (const to of next.get(file) ?? []) {
      if (!index.has(to)) {
        visit(to)
        low.set(file, Math.min(low.get(file)!, low.get(to)!))
      } else if (onStack.has(to)) {
        low.set(file, Math.min(low.get(file)!, index.get(to)!))
      }
    }
    if (low.get(file) === index.get(file)) {
      const component: Array<string> = []
      let member: string
      do {
        member = stack.pop()!
        onStack.delete(member)
        component.push(member)
      } while (member !== file)
      if (component.length > 1 || (next.get(file) ?? []).includes(file)) components.push(component.sort())
    }
  }
  for (const file of files) if (!index.has(file)) visit(file)
  return components
}

/** A shortest path from the component's first file back to itself, inside the component. */
const cyclePath = (component: ReadonlyArray<string>, next: ReadonlyMap<string, ReadonlyArray<string>>): Array<string> => {
  const start = component[0]!
  const inside = new Set(component)
  const previous = new Map<string, string>()
  const queue = [start]
  while (queue.length > 0) {
    const file = queue.shift()!
    for (const to of next.get(file) ?? []) {
      if (!inside.has(to)) continue
      if (to === start) {
        const path = [start]
        for (let at: string | undefined = file; at !== undefined && at !== start; at = previous.get(at)) path.splice(1, 0, at)
        return [...path, start]
      }
      if (!previous.has(to)) {
        previous.set(to, file)
        queue.push(to)
      }
    }
  }
  return [...component, start]
}

/** Every rule violation, import cycle and unresolvable relative import in the graph. */
export const findViolations = (graph: ImportGraph, rules: ReadonlyArray<Rule>): Array<Finding> => {
  const findings = new Map<string, Finding>()
  for (const edge of graph.edges) {
    for (const rule of rules) {
      if (
        matches(edge.from, rule.from) && !matches(edge.from, rule.fromExcept) &&
        matches(edge.to, rule.to) && !matches(edge.to, rule.toExcept)
      ) {
        const finding = ruleFinding(rule, edge)
        // The first import line stands for the pair; later lines add nothing to fix.
        if (!findings.has(finding.key)) findings.set(finding.key, finding)
      }
    }
  }
  const next = new Map<string, Array<string>>()
  for (const edge of graph.edges) {
    const targets = next.get(edge.from) ?? []
    if (!targets.includes(edge.to)) targets.push(edge.to)
    next.set(edge.from, targets)
  }
  for (const component of cyclicComponents(graph.files, next)) {
    const key = cycleKey(component)
    findings.set(key, {
      key,
      message: `import cycle (rule ${NO_CYCLES}): ${cyclePath(component, next).join(" → ")}` +
        (component.length > 2 ? ` (files in the cycle: ${component.join(", ")})` : "")
    })
  }
  for (const unresolved of graph.unresolved) {
    const key = `unresolved ${unresolved.from} ${unresolved.specifier}`
    findings.set(key, { key, message: `${unresolved.from}:${unresolved.line} imports "${unresolved.specifier}", which names no file` })
  }
  return [...findings.values()]
}

/**
 * The failures: findings not listed as known, and known entries that no
 * longer occur. Empty when the tree keeps its boundaries.
 */
export const checkBoundaries = (
  graph: ImportGraph,
  rules: ReadonlyArray<Rule>,
  known: ReadonlyArray<KnownViolation>
): Array<string> => {
  const findings = findViolations(graph, rules)
  const found = new Set(findings.map((finding) => finding.key))
  const listed = new Set(known.map(knownKey))
  const ruleIds = new Set([NO_CYCLES, ...rules.map((rule) => rule.id)])
  return [
    ...known.filter((entry) => !ruleIds.has(entry.rule)).map((entry) => `knownViolations names an unknown rule: ${entry.rule}`),
    ...findings.filter((finding) => !listed.has(finding.key)).map((finding) => finding.message),
    ...known.filter((entry) => !found.has(knownKey(entry))).map((entry) =>
      `knownViolations lists ${knownKey(entry)}, which no longer occurs: remove it from the list`
    )
  ]
}
