/**
 * The public API and its documentation: the source file behind every entry
 * point of package.json "exports" (patterns such as "./client/*" expanded to
 * the files they reach, folders closed with `null` left out), every export of
 * those files, and whether each carries a JSDoc in Effect's style: a summary
 * line, `@since` and `@category`.
 *
 * Where the documentation is looked for:
 * - a declaration in the entry file: on the declaration (every declaration of
 *   the name, e.g. both the `type` and the `const` of a tagged enum; for an
 *   overloaded function, the first signature);
 * - `export * as X from "…"`, and a namespace import exported again
 *   (`import * as X …; export { X }`): on that export statement, as Effect's
 *   index files do;
 * - `export { x } from "…"` and `export * from "…"`: on the original
 *   declaration, listed under the file that declares it.
 *
 * Run as a script to print the undocumented exports, one `file#name` a line:
 *   npx node test/house/exportDocs.ts
 */
import { readdirSync, readFileSync } from "node:fs"
import { join, relative, resolve, sep } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

type Target = string | null | { readonly types?: string; readonly default?: string; readonly import?: string }

const toPosix = (path: string): string => path.split(sep).join("/")

/** The JavaScript file a target names, if any. */
const targetFile = (target: Target): string | undefined =>
  target === null ? undefined : typeof target === "string" ? target : (target.default ?? target.import)

/** dist/x/Y.js → src/x/Y.ts, as tsconfig.build.json maps them (rootDir src, outDir dist). */
const sourceOf = (distFile: string): string | undefined => {
  const match = /^\.\/dist\/(.*)\.js$/.exec(distFile)
  return match === null ? undefined : `src/${match[1]}.ts`
}

/** Node's choice for a subpath: the exact key, else the pattern with the longest prefix before `*`. */
const resolveSubpath = (exports: Readonly<Record<string, Target>>, subpath: string): Target | undefined => {
  if (subpath in exports && !subpath.includes("*")) return exports[subpath]
  let best: { readonly key: string; readonly match: string } | undefined
  for (const key of Object.keys(exports)) {
    const star = key.indexOf("*")
    if (star === -1) continue
    const prefix = key.slice(0, star)
    const suffix = key.slice(star + 1)
    if (subpath.startsWith(prefix) && subpath.endsWith(suffix) && subpath.length >= key.length - 1) {
      if (best === undefined || prefix.length > best.key.indexOf("*")) best = { key, match: subpath.slice(prefix.length, subpath.length - suffix.length) }
    }
  }
  if (best === undefined) return undefined
  const target = exports[best.key]!
  const replace = (path: string | undefined) => path?.replaceAll("*", best.match)
  return target === null ? null : typeof target === "string" ? replace(target)! : { default: replace(targetFile(target))! }
}

/** The source files behind the package's entry points, sorted, relative to `root`. */
export const entryFiles = (root: string): Array<string> => {
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { readonly exports: Readonly<Record<string, Target>> }
  const sources = readdirSync(join(root, "src"), { recursive: true, encoding: "utf8" })
    .filter((path) => path.endsWith(".ts") && !path.endsWith(".d.ts"))
    .map((path) => `src/${toPosix(path)}`)
  const entries = new Set<string>()
  for (const [key, target] of Object.entries(manifest.exports)) {
    const file = targetFile(target)
    if (file === undefined || !file.endsWith(".js")) continue
    if (!key.includes("*")) {
      const source = sourceOf(file)
      if (source !== undefined && sources.includes(source)) entries.add(source)
      continue
    }
    // Every source file the pattern's target reaches, kept when Node would resolve its subpath to it.
    const [before, after] = sourceOf(file)!.split("*") as [string, string]
    for (const source of sources) {
      if (!source.startsWith(before) || !source.endsWith(after)) continue
      const match = source.slice(before.length, source.length - after.length)
      const resolved = resolveSubpath(manifest.exports, key.replace("*", match))
      if (resolved !== undefined && resolved !== null && sourceOf(targetFile(resolved) ?? "") === source) entries.add(source)
    }
  }
  return [...entries].sort()
}

export interface ExportDoc {
  /** `file#name`: the file that declares or re-exports the name as a namespace. */
  readonly id: string
  /** What the JSDoc lacks: "summary", "@since", "@category"; empty when documented. */
  readonly missing: ReadonlyArray<string>
}

/** The statement a declaration belongs to (a variable's is its `const` statement). */
const statementOf = (node: ts.Node): ts.Node => {
  let at = node
  while (at.parent !== undefined && !ts.isSourceFile(at.parent)) at = at.parent
  return at
}

const hasTag = (doc: ts.JSDoc, name: string): boolean =>
  (doc.tags ?? []).some((tag) => tag.tagName.text === name && (ts.getTextOfJSDocComment(tag.comment)?.trim() ?? "") !== "")

/**
 * What a declaration's own JSDoc (the last one before it) lacks. Before the
 * file's first statement, the first JSDoc documents the module (as Effect's
 * docgen reads it) when another follows it or when it has no `@category`.
 */
const missingDocs = (node: ts.Node): Array<string> => {
  const all = ts.getJSDocCommentsAndTags(node).filter(ts.isJSDoc)
  const first = statementOf(node) === node.getSourceFile().statements[0]
  const docs = first && (all.length > 1 || (all.length === 1 && !hasTag(all[0]!, "category"))) ? all.slice(1) : all
  const doc = docs[docs.length - 1]
  if (doc === undefined) return ["summary", "@since", "@category"]
  const summary = ts.getTextOfJSDocComment(doc.comment)?.trim() ?? ""
  return [
    ...(summary === "" ? ["summary"] : []),
    ...(hasTag(doc, "since") ? [] : ["@since"]),
    ...(hasTag(doc, "category") ? [] : ["@category"])
  ]
}

/** The node a declaration's JSDoc is attached to: an export clause's is on its statement. */
const documentedNode = (declaration: ts.Declaration): ts.Node =>
  ts.isNamespaceExport(declaration) ? declaration.parent : ts.isExportSpecifier(declaration) ? declaration.parent.parent : declaration

/** Every declaration that needs its own doc: overloads and the implementation share the first one's. */
const declarationsToDocument = (declarations: ReadonlyArray<ts.Declaration>): Array<ts.Declaration> => {
  let seenFunction = false
  return declarations.filter((declaration) => {
    if (!ts.isFunctionDeclaration(declaration)) return true
    if (seenFunction) return false
    seenFunction = true
    return true
  })
}

/** Every export of the entry files with what its documentation lacks, sorted by id. */
export const exportDocs = (root: string, entries: ReadonlyArray<string> = entryFiles(root)): Array<ExportDoc> => {
  const rootNames = readdirSync(join(root, "src"), { recursive: true, encoding: "utf8" })
    .filter((path) => path.endsWith(".ts"))
    .map((path) => resolve(root, "src", path))
  // Only our own files, no lib and no packages: finding declarations and their comments needs no types.
  const program = ts.createProgram(rootNames, {
    noResolve: true,
    noLib: true,
    noEmit: true,
    allowImportingTsExtensions: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    types: []
  })
  const checker = program.getTypeChecker()
  const results = new Map<string, ExportDoc>()
  const record = (file: string, name: string, declarations: ReadonlyArray<ts.Declaration>) => {
    const id = `${file}#${name}`
    if (results.has(id)) return
    const missing = new Set(declarationsToDocument(declarations).flatMap((declaration) => missingDocs(documentedNode(declaration))))
    results.set(id, { id, missing: ["summary", "@since", "@category"].filter((item) => missing.has(item)) })
  }
  for (const entry of entries) {
    const source = program.getSourceFile(resolve(root, entry))
    const moduleSymbol = source === undefined ? undefined : checker.getSymbolAtLocation(source)
    if (moduleSymbol === undefined) throw new Error(`${entry}: not a module the compiler could read`)
    for (const symbol of checker.getExportsOfModule(moduleSymbol)) {
      const own = symbol.declarations ?? []
      const namespaceExport = own.find(ts.isNamespaceExport)
      if (namespaceExport !== undefined) {
        record(entry, symbol.name, [namespaceExport])
        continue
      }
      const original = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol
      const declarations = original.declarations ?? []
      if (declarations.some(ts.isSourceFile)) {
        // A namespace import passed on (`import * as X …; export { X }`): documented where it is exported.
        record(entry, symbol.name, own)
        continue
      }
      const declaredIn = declarations[0]?.getSourceFile().fileName
      const file = declaredIn === undefined ? entry : toPosix(relative(root, declaredIn))
      record(file, original.name === "default" ? symbol.name : original.name, declarations)
    }
  }
  return [...results.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL("../..", import.meta.url))
  for (const doc of exportDocs(root)) if (doc.missing.length > 0) console.log(doc.id)
}
