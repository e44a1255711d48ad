/**
 * Documentation code blocks as tests: every ```ts block of a Markdown file is
 * type-checked against the BUILT package and run, unless an HTML comment on
 * the line before it (blank lines between are allowed) says otherwise:
 *
 *   <!-- fragment: why it must not run -->   type-checked, not run
 *   <!-- excerpt: why it does not compile alone -->  neither
 *
 * The reason is required. A ```text block right after a block that runs
 * (blank lines between, and at most an `<!-- output: … -->` comment) is what
 * the program prints on stdout, and the run must print exactly that. What
 * differs from run to run is declared in the comment and replaced by a
 * placeholder on both sides before they are compared:
 *
 *   <!-- output: normalize=port,time,duration,id -->
 *
 * (`port`: the port of a loopback URL; `time`: clock times and ISO date-times;
 * `duration`: a number with a time unit; `id`: UUIDs, process ids and long
 * random tokens; see NORMALIZERS). The syntax is documented for contributors
 * in docs/README.md.
 *
 * The blocks are written to a folder under `.docs-tmp/` inside the
 * repository, so `import … from "effect-mcp-transport/…"` resolves by the
 * package's self-reference to dist/ through package.json "exports", exactly
 * as a user's import does, and `effect` to the repository's node_modules.
 * All blocks go through ONE tsc run (strict, NodeNext, erasable syntax only,
 * since Node runs them by stripping types); each runnable block then runs
 * with this process's Node, from the repository root, under a time limit,
 * with `npx effect-mcp-transport` going straight to the package's command
 * (npxShim).
 */
import { spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { delimiter, join } from "node:path"

export type BlockMode = "run" | "fragment" | "excerpt"

export type Normalization = "port" | "time" | "duration" | "id"

/**
 * What each normalization replaces, in this order (a date-time before the id
 * rule could take it for a token), with its placeholder. Only what a block
 * declares is replaced, so a port or a time in any other output is compared
 * as it is.
 */
export const NORMALIZERS: ReadonlyArray<readonly [Normalization, RegExp, string]> = [
  ["time", /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?/g, "<time>"],
  ["time", /\b\d{2}:\d{2}:\d{2}(?:\.\d+)?\b/g, "<time>"],
  ["port", /\b((?:127\.0\.0\.1|localhost|\[::1\]|0\.0\.0\.0)):\d{1,5}\b/g, "$1:<port>"],
  ["id", /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, "<id>"],
  ["id", /\bpid (\d+)\b/g, "pid <id>"],
  // A stream id with its session's digest before `~`: the digest may hold no digit.
  ["id", /(?<![\w-])[\w-]{8,}~[\w-]+/g, "<id>"],
  // A token of ten or more URL-safe characters with a letter and a digit in it: a session or event id.
  ["id", /(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[\w-]{10,}(?![\w-])/g, "<id>"],
  ["duration", /\b\d+(?:\.\d+)?\s?(?:ns|µs|us|ms|millis|s|seconds?|minutes?)\b/g, "<duration>"]
]

const NORMALIZATIONS: ReadonlySet<string> = new Set<Normalization>(["port", "time", "duration", "id"])

/** The text with what the normalizations name replaced by placeholders. */
export const normalize = (text: string, normalizations: ReadonlyArray<Normalization>): string =>
  NORMALIZERS.reduce(
    (result, [name, pattern, placeholder]) => normalizations.includes(name) ? result.replace(pattern, placeholder) : result,
    text
  )

/** The ```text block that shows what a runnable block prints on stdout. */
export interface ExpectedOutput {
  /** 1-based line of its opening fence. */
  readonly line: number
  readonly text: string
  readonly normalize: ReadonlyArray<Normalization>
}

export interface DocBlock {
  /** The Markdown file, as given to the extractor (shown in failures). */
  readonly file: string
  /** 1-based line of the opening fence; the code's first line is `line + 1`. */
  readonly line: number
  readonly code: string
  readonly mode: BlockMode
  /** Why a block is not run (required for the two markers). */
  readonly reason?: string | undefined
  /** What it prints, when the page shows it (runnable blocks only). */
  readonly output?: ExpectedOutput | undefined
}

export interface Extraction {
  readonly blocks: ReadonlyArray<DocBlock>
  /** Malformed or misplaced markers, as failure messages. */
  readonly problems: ReadonlyArray<string>
}

const TS_LANGUAGES = new Set(["ts", "typescript"])
const MARKER = /^<!--\s*(excerpt|fragment)\b\s*(?::(.*?))?-->\s*$/
const OUTPUT_MARKER = /^<!--\s*output\b\s*(?::(.*?))?-->\s*$/
const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)/

/** `normalize=port,time` (the only setting), or the problem with it. */
const parseOutputMarker = (settings: string): ReadonlyArray<Normalization> | string => {
  const match = /^normalize\s*=\s*([\w\s,-]+)$/.exec(settings.trim())
  if (match === null) return `<!-- output: ${settings.trim()} --> is not of the form <!-- output: normalize=port,time,duration,id -->`
  const names = match[1]!.split(",").map((name) => name.trim()).filter((name) => name !== "")
  const unknown = names.filter((name) => !NORMALIZATIONS.has(name))
  if (unknown.length > 0) return `<!-- output --> names ${unknown.join(", ")}; it knows ${[...NORMALIZATIONS].join(", ")}`
  return names as Array<Normalization>
}

/** The ```ts blocks of a Markdown text, with their markers and the output they show. */
export const extractBlocks = (markdown: string, file: string): Extraction => {
  const lines = markdown.split(/\r?\n/)
  const blocks: Array<DocBlock> = []
  const problems: Array<string> = []
  let pending: { readonly mode: BlockMode; readonly reason: string; readonly line: number } | undefined
  // The runnable block a ```text block here would be the output of, and the output marker seen since.
  let lastRun: number | undefined
  let outputMarker: { readonly line: number; readonly normalize: ReadonlyArray<Normalization> } | undefined
  const misplacedOutputMarker = () => {
    if (outputMarker !== undefined) {
      problems.push(`${file}:${outputMarker.line}: <!-- output --> is not between a ts block that runs and a text block`)
    }
    outputMarker = undefined
  }
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i]!
    const output = OUTPUT_MARKER.exec(text.trim())
    if (output !== null) {
      misplacedOutputMarker()
      const parsed = parseOutputMarker(output[1] ?? "")
      if (typeof parsed === "string") problems.push(`${file}:${i + 1}: ${parsed}`)
      else outputMarker = { line: i + 1, normalize: parsed }
      if (lastRun === undefined) misplacedOutputMarker()
      continue
    }
    const marker = MARKER.exec(text.trim())
    if (marker !== null) {
      if (pending !== undefined) problems.push(`${file}:${pending.line}: <!-- ${pending.mode} --> is not followed by a ts block`)
      misplacedOutputMarker()
      lastRun = undefined
      const reason = (marker[2] ?? "").trim()
      if (reason === "") problems.push(`${file}:${i + 1}: <!-- ${marker[1]} --> needs a reason: <!-- ${marker[1]}: why -->`)
      pending = { mode: marker[1] as BlockMode, reason, line: i + 1 }
      continue
    }
    const fence = FENCE.exec(text)
    if (fence === null) {
      if (text.trim() !== "") {
        if (pending !== undefined) {
          problems.push(`${file}:${pending.line}: <!-- ${pending.mode} --> is not followed by a ts block`)
          pending = undefined
        }
        misplacedOutputMarker()
        lastRun = undefined
      }
      continue
    }
    const open = fence[1]!
    const language = fence[2]!.toLowerCase()
    const start = i
    const body: Array<string> = []
    // The block ends at a fence of the same character, at least as long, with nothing after it.
    for (i++; i < lines.length; i++) {
      const close = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(lines[i]!)
      if (close !== null && close[1]![0] === open[0] && close[1]!.length >= open.length) break
      body.push(lines[i]!)
    }
    if (language === "text" && lastRun !== undefined && pending === undefined) {
      blocks[lastRun] = {
        ...blocks[lastRun]!,
        output: { line: start + 1, text: body.length === 0 ? "" : `${body.join("\n")}\n`, normalize: outputMarker?.normalize ?? [] }
      }
      outputMarker = undefined
      lastRun = undefined
      continue
    }
    misplacedOutputMarker()
    lastRun = undefined
    if (TS_LANGUAGES.has(language)) {
      const mode = pending?.mode ?? "run"
      blocks.push({ file, line: start + 1, code: `${body.join("\n")}\n`, mode, reason: pending?.reason })
      if (mode === "run") lastRun = blocks.length - 1
    } else if (pending !== undefined) {
      problems.push(`${file}:${pending.line}: <!-- ${pending.mode} --> is not followed by a ts block`)
    }
    pending = undefined
  }
  if (pending !== undefined) problems.push(`${file}:${pending.line}: <!-- ${pending.mode} --> is not followed by a ts block`)
  misplacedOutputMarker()
  return { blocks, problems }
}

/**
 * The lines of `expected` and `actual` as a diff: `-` only on the page, `+`
 * only in the run, two spaces in both (a longest common subsequence).
 */
export const lineDiff = (expected: string, actual: string): string => {
  const a = expected.replace(/\n$/, "").split("\n")
  const b = actual.replace(/\n$/, "").split("\n")
  // common[i][j]: the longest common subsequence of a[i..] and b[j..].
  const common = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0))
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      common[i]![j] = a[i] === b[j] ? common[i + 1]![j + 1]! + 1 : Math.max(common[i + 1]![j]!, common[i]![j + 1]!)
    }
  }
  const out: Array<string> = []
  let i = 0
  let j = 0
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      out.push(`  ${a[i++]}`)
      j++
    } else if (i < a.length && (j === b.length || common[i + 1]![j]! >= common[i]![j + 1]!)) {
      out.push(`- ${a[i++]}`)
    } else {
      out.push(`+ ${b[j++]}`)
    }
  }
  return out.join("\n")
}

export interface CheckOptions {
  /** The repository root: its package.json names the package and its exports, its node_modules serve the rest. */
  readonly root: string
  /** Per runnable block. Default 60 s (a block that spawns a server through npx is slow on a loaded machine). */
  readonly timeoutMs?: number | undefined
  /** Blocks run at once. Default 2. */
  readonly concurrency?: number | undefined
}

interface Run {
  readonly code: number | null
  readonly timedOut: boolean
  /** stdout and stderr as they came. */
  readonly output: string
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs a command in a process group of its own: on a timeout the whole group
 * gets SIGKILL, so a block that started a server leaves nothing behind.
 */
const execute = (
  command: string,
  args: ReadonlyArray<string>,
  cwd: string,
  timeoutMs: number,
  env: NodeJS.ProcessEnv = process.env
): Promise<Run> =>
  new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk
      stdout += chunk
    })
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk
      stderr += chunk
    })
    let timedOut = false
    const killGroup = () => {
      try {
        process.kill(-child.pid!, "SIGKILL")
      } catch {
        // the group is gone already
      }
    }
    const timer = setTimeout(() => {
      timedOut = true
      killGroup()
    }, timeoutMs)
    child.on("close", (code) => {
      clearTimeout(timer)
      // A block that exits while something it spawned still runs must not leave it behind.
      killGroup()
      resolve({ code, timedOut, output, stdout, stderr })
    })
    child.on("error", (error) => {
      clearTimeout(timer)
      resolve({ code: null, timedOut: false, output: String(error), stdout: "", stderr: String(error) })
    })
  })

/**
 * A folder with an `npx` that runs this package's own command
 * (`npx effect-mcp-transport …`) as npx resolves it in this repository, the
 * package.json `bin` under this process's Node, without npm's start-up (a
 * second of CPU per spawn, which on a loaded machine can outlast a stdio
 * client's era probe and change what the block prints). Any other `npx` is
 * the real one, found further on the PATH.
 */
const npxShim = (root: string, work: string): string => {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { name: string; bin?: Record<string, string> }
  const bin = pkg.bin?.[pkg.name]
  const folder = join(work, "bin")
  mkdirSync(folder)
  if (bin === undefined) return folder
  const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`
  writeFileSync(
    join(folder, "npx"),
    [
      "#!/bin/sh",
      `if [ "$1" = ${quote(pkg.name)} ]; then shift; exec ${quote(process.execPath)} ${quote(join(root, bin))} "$@"; fi`,
      `PATH="\${PATH#*:}"`,
      "export PATH",
      `exec npx "$@"`,
      ""
    ].join("\n"),
    { mode: 0o755 }
  )
  return folder
}

const compilerOptions = {
  strict: true,
  exactOptionalPropertyTypes: true,
  target: "ES2022",
  lib: ["ES2022", "DOM"],
  module: "NodeNext",
  moduleResolution: "NodeNext",
  // Each block is its own module, so two blocks may declare the same names.
  moduleDetection: "force",
  types: ["node"],
  verbatimModuleSyntax: true,
  // Node runs the blocks by stripping types: no enums, namespaces or parameter properties.
  erasableSyntaxOnly: true,
  // The published declarations are checked by the package test; here only the blocks are.
  skipLibCheck: true,
  noEmit: true
}

const where = (block: DocBlock): string => `${block.file}:${block.line}`

const lastLines = (text: string, count: number): string => text.trimEnd().split("\n").slice(-count).join("\n")

const outputFailure = (block: DocBlock, output: ExpectedOutput, expected: string, actual: string, stderr: string): string => {
  const normalized = output.normalize.length === 0 ? "" : `, after normalize=${output.normalize.join(",")}`
  const lines = [
    `${block.file}:${output.line} (output of the ts block at line ${block.line}): stdout is not what the page shows ` +
    `(- page, + run${normalized}):`,
    lineDiff(expected, actual)
  ]
  if (stderr.trim() !== "") lines.push(`stderr (not compared):\n${lastLines(stderr, 10)}`)
  return lines.join("\n")
}

/**
 * Type-checks and runs the blocks of the given Markdown documents. Returns
 * the failures, each naming the file and line; empty when all pass.
 * Needs a built package (dist/).
 */
export const checkDocs = async (
  documents: ReadonlyArray<{ readonly file: string; readonly text: string }>,
  options: CheckOptions
): Promise<Array<string>> => {
  const failures: Array<string> = []
  const blocks: Array<DocBlock> = []
  for (const document of documents) {
    const extraction = extractBlocks(document.text, document.file)
    failures.push(...extraction.problems)
    blocks.push(...extraction.blocks)
  }
  const checked = blocks.filter((block) => block.mode !== "excerpt")
  if (checked.length === 0) return failures
  if (!existsSync(join(options.root, "dist/index.d.ts"))) {
    return [...failures, "dist/ is missing: run `npm run build` first (documentation blocks use the built package)"]
  }

  mkdirSync(join(options.root, ".docs-tmp"), { recursive: true })
  const work = mkdtempSync(join(options.root, ".docs-tmp", "run-"))
  try {
    const names = new Map<string, DocBlock>()
    for (const block of checked) {
      const name = `${block.file.replace(/[^A-Za-z0-9]+/g, "_")}-L${block.line}.ts`
      names.set(name, block)
      writeFileSync(join(work, name), block.code)
    }
    writeFileSync(join(work, "tsconfig.json"), JSON.stringify({ compilerOptions, files: [...names.keys()] }, null, 2))

    const tsc = join(options.root, "node_modules/typescript/bin/tsc")
    const compiled = await execute(process.execPath, [tsc, "-p", join(work, "tsconfig.json"), "--pretty", "false"], work, 300_000)
    const broken = new Set<DocBlock>()
    if (compiled.code !== 0) {
      // `name.ts(3,5): error TS2304: …`, continuation lines indented under it.
      for (const line of compiled.output.split("\n")) {
        const error = /^(.+?\.ts)\((\d+),(\d+)\): (.*)$/.exec(line)
        const block = error === null ? undefined : names.get(error[1]!)
        if (error !== null && block !== undefined) {
          broken.add(block)
          failures.push(`${block.file}:${block.line + Number(error[2])} (ts block at line ${block.line}): ${error[4]}`)
        } else if (line.trim() !== "" && failures.length > 0 && /^\s/.test(line)) {
          failures[failures.length - 1] += `\n${line}`
        } else if (line.trim() !== "") {
          failures.push(`tsc: ${line}`)
        }
      }
      if (compiled.timedOut) failures.push("tsc did not finish")
    }

    const timeoutMs = options.timeoutMs ?? 60_000
    const env = { ...process.env, PATH: `${npxShim(options.root, work)}${delimiter}${process.env.PATH ?? ""}` }
    const runnable = [...names].filter(([, block]) => block.mode === "run" && !broken.has(block))
    const runOne = async ([name, block]: readonly [string, DocBlock]): Promise<void> => {
      const result = await execute(process.execPath, [join(work, name)], options.root, timeoutMs, env)
      if (result.timedOut) {
        failures.push(
          `${where(block)} (ts block): did not finish within ${timeoutMs / 1000} s ` +
            `(a block that serves or waits is marked <!-- fragment: why -->)\n${lastLines(result.output, 10)}`
        )
      } else if (result.code !== 0) {
        failures.push(`${where(block)} (ts block): exited with code ${result.code}\n${lastLines(result.output, 20)}`)
      } else if (block.output !== undefined) {
        const expected = normalize(block.output.text, block.output.normalize)
        const actual = normalize(result.stdout, block.output.normalize)
        if (expected !== actual) failures.push(outputFailure(block, block.output, expected, actual, result.stderr))
      }
    }
    const queue = [...runnable]
    const workers = Array.from({ length: Math.max(1, options.concurrency ?? 2) }, async () => {
      for (let next = queue.shift(); next !== undefined; next = queue.shift()) await runOne(next)
    })
    await Promise.all(workers)
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
  return failures
}
