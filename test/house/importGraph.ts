/**
 * The import graph of a source folder: for every `.ts` file, the files it
 * imports through a relative specifier.
 *
 * Counted as an import: `import … from`, `import type … from`, `export … from`,
 * `export type … from`, a bare `import "…"`, and `import("…")` with a string
 * literal (a dynamic import, or `typeof import("…")` in a type). Type-only
 * imports are included on purpose: a module that names another side's types
 * changes when that side changes, which is the coupling the boundaries are
 * about. Package specifiers (`effect`, `node:fs`) are not edges; a relative
 * specifier that names no file is listed in `unresolved`.
 *
 * The scan walks TypeScript's syntax tree (parse only, no type checking), so
 * imports inside comments and strings are not counted and multi-line imports
 * are. (`ts.preProcessFile` would be lighter but misses `export * as X from`.)
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve, sep } from "node:path"
import ts from "typescript"

export interface ImportEdge {
  /** The importing file, relative to the root, with `/` separators. */
  readonly from: string
  /** The imported file, relative to the root. */
  readonly to: string
  /** The specifier as written. */
  readonly specifier: string
  /** 1-based line of the specifier in `from`. */
  readonly line: number
}

export interface UnresolvedImport {
  readonly from: string
  readonly specifier: string
  readonly line: number
}

export interface ImportGraph {
  /** Every scanned file, sorted. */
  readonly files: ReadonlyArray<string>
  readonly edges: ReadonlyArray<ImportEdge>
  readonly unresolved: ReadonlyArray<UnresolvedImport>
}

const toPosix = (path: string): string => path.split(sep).join("/")

const sourceFiles = (root: string, dir: string): Array<string> =>
  readdirSync(join(root, dir), { recursive: true, encoding: "utf8" })
    .map((entry) => toPosix(join(dir, entry)))
    .filter((path) => path.endsWith(".ts") && !path.endsWith(".d.ts") && statSync(join(root, path)).isFile())
    .sort()

const isFile = (path: string): boolean => existsSync(path) && statSync(path).isFile()

/** `./a.ts`, `./a.js` (compiled-style), `./a` and `./a/index.ts`, in that order. */
const resolveRelative = (root: string, from: string, specifier: string): string | undefined => {
  const base = resolve(root, dirname(from), specifier)
  const candidates = [base, base.replace(/\.([mc]?)js$/, ".$1ts"), `${base}.ts`, join(base, "index.ts")]
  const found = candidates.find(isFile)
  return found === undefined ? undefined : toPosix(relative(root, found))
}

/** Every module specifier written in a file, with the node that carries it. */
const specifiersOf = (file: ts.SourceFile): Array<ts.StringLiteralLike> => {
  const found: Array<ts.StringLiteralLike> = []
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier !== undefined) {
      if (ts.isStringLiteralLike(node.moduleSpecifier)) found.push(node.moduleSpecifier)
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      if (ts.isStringLiteralLike(node.moduleReference.expression)) found.push(node.moduleReference.expression)
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [argument] = node.arguments
      if (argument !== undefined && ts.isStringLiteralLike(argument)) found.push(argument)
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      if (ts.isStringLiteralLike(node.argument.literal)) found.push(node.argument.literal)
    }
    ts.forEachChild(node, visit)
  }
  visit(file)
  return found
}

/** Reads the graph of every `.ts` file under `root/dir` (default `src`). */
export const readImportGraph = (root: string, dir = "src"): ImportGraph => {
  const files = sourceFiles(root, dir)
  const edges: Array<ImportEdge> = []
  const unresolved: Array<UnresolvedImport> = []
  for (const from of files) {
    const file = ts.createSourceFile(from, readFileSync(join(root, from), "utf8"), ts.ScriptTarget.Latest, true)
    for (const literal of specifiersOf(file)) {
      const specifier = literal.text
      if (!specifier.startsWith("./") && !specifier.startsWith("../")) continue
      const line = file.getLineAndCharacterOfPosition(literal.getStart(file)).line + 1
      const to = resolveRelative(root, from, specifier)
      if (to === undefined) unresolved.push({ from, specifier, line })
      else edges.push({ from, to, specifier, line })
    }
  }
  return { files, edges, unresolved }
}
