/**
 * The documentation's ```ts blocks type-check against the built package and
 * run, and print what the page shows after them (docBlocks.ts; the markers
 * are documented in docs/README.md). Needs `npm run build` first, as
 * `npm test` does.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { checkDocs, extractBlocks, lineDiff, normalize } from "./docBlocks.ts"

const repo = fileURLToPath(new URL("../..", import.meta.url))

const documents = ["README.md", ...readdirSync(join(repo, "docs"), { recursive: true, encoding: "utf8" }).map((path) => `docs/${path}`)]
  .filter((path) => path.endsWith(".md"))
  .sort()

describe("documentation code blocks", () => {
  it("include docs/README.md", () => {
    expect(documents).toContain("docs/README.md")
  })

  it("type-check against the built package, run, and print what the page shows", async () => {
    const failures = await checkDocs(documents.map((file) => ({ file, text: readFileSync(join(repo, file), "utf8") })), { root: repo })
    expect(failures, `\n${failures.join("\n\n")}\n`).toEqual([])
  }, 600_000)
})

describe("extracting blocks", () => {
  it("takes ts and typescript blocks with their fence line, mode and reason, and skips other languages", () => {
    const markdown = [
      "# Title", //                                   1
      "```ts", //                                     2
      "const a = 1", //                               3
      "```", //                                       4
      "<!-- fragment: starts a server -->", //  5
      "", //                                          6
      "```typescript", //                             7
      "const b = 2", //                               8
      "```", //                                       9
      "```sh", //                                     10
      "npm test", //                                  11
      "```", //                                       12
      "<!-- excerpt: an excerpt -->", //             13
      "~~~ts", //                                     14
      "options.timeout", //                           15
      "```", //                                       16
      "~~~", //                                       17
      "````md", //                                    18
      "```ts", //                                     19
      "not a block of its own", //                    20
      "```", //                                       21
      "````" //                                       22
    ].join("\n")
    const { blocks, problems } = extractBlocks(markdown, "doc.md")
    expect(problems).toEqual([])
    expect(blocks).toEqual([
      { file: "doc.md", line: 2, code: "const a = 1\n", mode: "run", reason: undefined },
      { file: "doc.md", line: 7, code: "const b = 2\n", mode: "fragment", reason: "starts a server" },
      { file: "doc.md", line: 14, code: "options.timeout\n```\n", mode: "excerpt", reason: "an excerpt" }
    ])
  })

  it("requires a reason and a ts block right after each marker", () => {
    const markdown = [
      "<!-- excerpt -->", //                 1
      "```ts", //                             2
      "x", //                                 3
      "```", //                               4
      "<!-- fragment: a server -->", // 5
      "Some prose.", //                       6
      "```ts", //                             7
      "y", //                                 8
      "```", //                               9
      "<!-- excerpt: shell -->", //          10
      "```sh", //                             11
      "ls", //                                12
      "```" //                                13
    ].join("\n")
    const { blocks, problems } = extractBlocks(markdown, "doc.md")
    expect(problems).toEqual([
      "doc.md:1: <!-- excerpt --> needs a reason: <!-- excerpt: why -->",
      "doc.md:5: <!-- fragment --> is not followed by a ts block",
      "doc.md:10: <!-- excerpt --> is not followed by a ts block"
    ])
    expect(blocks.map((block) => [block.line, block.mode])).toEqual([[2, "excerpt"], [7, "run"]])
  })
})

describe("expected output", () => {
  it("is the text block right after a block that runs, with the normalizations its comment declares", () => {
    const markdown = [
      "```ts", //                                     1
      "console.log(1)", //                            2
      "```", //                                       3
      "", //                                          4
      "```text", //                                   5
      "1", //                                         6
      "```", //                                       7
      "```ts", //                                     8
      "console.log(2)", //                            9
      "```", //                                       10
      "<!-- output: normalize=port, time -->", //    11
      "```text", //                                   12
      "2", //                                         13
      "```", //                                       14
      "<!-- fragment: serves -->", //                15
      "```ts", //                                     16
      "serve()", //                                   17
      "```", //                                       18
      "```text", //                                   19
      "not checked: the block does not run", //      20
      "```", //                                       21
      "```ts", //                                     22
      "console.log(3)", //                            23
      "```", //                                       24
      "Prose between: the next text block is not its output.", // 25
      "```text", //                                   26
      "a diagram", //                                 27
      "```" //                                        28
    ].join("\n")
    const { blocks, problems } = extractBlocks(markdown, "doc.md")
    expect(problems).toEqual([])
    expect(blocks.map((block) => [block.line, block.output])).toEqual([
      [1, { line: 5, text: "1\n", normalize: [] }],
      [8, { line: 12, text: "2\n", normalize: ["port", "time"] }],
      [16, undefined],
      [22, undefined]
    ])
  })

  it("refuses an output comment that is misplaced, malformed or names an unknown normalization", () => {
    const markdown = [
      "<!-- output: normalize=port -->", //        1
      "```text", //                                 2
      "x", //                                       3
      "```", //                                     4
      "```ts", //                                   5
      "y", //                                       6
      "```", //                                     7
      "<!-- output: ports -->", //                 8
      "```text", //                                 9
      "y", //                                       10
      "```", //                                     11
      "```ts", //                                   12
      "z", //                                       13
      "```", //                                     14
      "<!-- output: normalize=port,weather -->", // 15
      "```text", //                                 16
      "z", //                                       17
      "```", //                                     18
      "```ts", //                                   19
      "w", //                                       20
      "```", //                                     21
      "<!-- output: normalize=id -->", //          22
      "Prose." //                                   23
    ].join("\n")
    expect(extractBlocks(markdown, "doc.md").problems).toEqual([
      "doc.md:1: <!-- output --> is not between a ts block that runs and a text block",
      "doc.md:8: <!-- output: ports --> is not of the form <!-- output: normalize=port,time,duration,id -->",
      "doc.md:15: <!-- output --> names weather; it knows port, time, duration, id",
      "doc.md:22: <!-- output --> is not between a ts block that runs and a text block"
    ])
  })

  it("normalizes only what is declared", () => {
    const text = "at http://127.0.0.1:41113/mcp, 09:03:55.196 (2026-12-03T09:03:55Z), retry in 3599993 ms, pid 4821, " +
      "session 0b4c3c1e-8f0a-4c3e-9a57-2f1d3b6c7e8a, event t6v7qRR3pNJl-3_1, protocol 2026-07-28, effect-mcp-example"
    expect(normalize(text, ["port"])).toBe(text.replace("41113", "<port>"))
    expect(normalize(text, ["port", "time", "duration", "id"])).toBe(
      "at http://127.0.0.1:<port>/mcp, <time> (<time>), retry in <duration>, pid <id>, " +
        "session <id>, event <id>, protocol 2026-07-28, effect-mcp-example"
    )
    expect(normalize(text, [])).toBe(text)
  })

  it("differences are shown line by line, page first", () => {
    expect(lineDiff("a\nb\nc\n", "a\nB\nc\nd\n")).toBe(["  a", "- b", "+ B", "  c", "+ d"].join("\n"))
    expect(lineDiff("a\n", "a\n")).toBe("  a")
  })
})

describe("checking blocks", () => {
  const work = mkdtempSync(join(tmpdir(), "house-docs-"))
  afterAll(() => rmSync(work, { recursive: true, force: true }))

  it("fails a block that does not type-check and one that throws, naming file and line; passes marked ones", async () => {
    const file = join(work, "planted.md")
    writeFileSync(
      file,
      [
        "```ts", //                                                         1
        `import * as JsonRpc from "effect-mcp-transport/JsonRpc"`, //       2
        `console.log(JsonRpc.request(1, "ping").method)`, //                3
        "```", //                                                           4
        "```ts", //                                                         5
        `import * as JsonRpc from "effect-mcp-transport/JsonRpc"`, //       6
        `const n: number = JsonRpc.request(1, "ping").method`, //           7
        "```", //                                                           8
        "```ts", //                                                         9
        `throw new Error("planted failure")`, //                           10
        "```", //                                                          11
        "<!-- fragment: never finishes -->", //                      12
        "```ts", //                                                        13
        `setInterval(() => {}, 1000)`, //                                  14
        "```", //                                                          15
        "<!-- excerpt: does not compile -->", //                          16
        "```ts", //                                                        17
        `const broken: number = "text"`, //                                18
        "```" //                                                           19
      ].join("\n")
    )
    const failures = await checkDocs([{ file, text: readFileSync(file, "utf8") }], { root: repo })
    expect(failures).toHaveLength(2)
    expect(failures).toContainEqual(
      expect.stringMatching(new RegExp(`^${file}:7 \\(ts block at line 5\\): error TS2322: Type 'string' is not assignable to type 'number'`))
    )
    expect(failures).toContainEqual(expect.stringMatching(new RegExp(`^${file}:9 \\(ts block\\): exited with code 1\\n[^]*planted failure`)))
  }, 120_000)

  it("fails a block whose stdout is not what the page shows, with a diff; passes ones equal after their normalizations", async () => {
    const text = [
      "```ts", //                                                              1
      `console.log("protocol 2026-07-28")`, //                                 2
      `console.log("tools: echo, add")`, //                                    3
      `console.error("a log line on stderr")`, //                              4
      "```", //                                                                5
      "", //                                                                   6
      "```text", //                                                            7
      "protocol 2025-11-25", //                                                8
      "tools: echo, add", //                                                   9
      "```", //                                                                10
      "```ts", //                                                              11
      `console.log(\`server at http://127.0.0.1:\${40000 + process.pid % 20000}/mcp\`)`, // 12
      "```", //                                                                13
      "<!-- output: normalize=port -->", //                                   14
      "```text", //                                                            15
      "server at http://127.0.0.1:41113/mcp", //                              16
      "```", //                                                                17
      // `npx effect-mcp-transport` is the package's own command; another npx is npm's.
      "```ts", //                                                              18
      `import { execFileSync } from "node:child_process"`, //                  19
      `console.log(execFileSync("npx", ["effect-mcp-transport", "--version"], { encoding: "utf8" }).trim())`, // 20
      `console.log(execFileSync("npx", ["--version"], { encoding: "utf8" }).trim() !== "")`, // 21
      "```", //                                                                22
      "```text", //                                                            23
      `effect-mcp-transport v${JSON.parse(readFileSync(join(repo, "package.json"), "utf8")).version}`, // 24
      "true", //                                                               25
      "```" //                                                                 26
    ].join("\n")
    const failures = await checkDocs([{ file: "shown.md", text }], { root: repo })
    expect(failures).toEqual([
      [
        "shown.md:7 (output of the ts block at line 1): stdout is not what the page shows (- page, + run):",
        "- protocol 2025-11-25",
        "+ protocol 2026-07-28",
        "  tools: echo, add",
        "stderr (not compared):",
        "a log line on stderr"
      ].join("\n")
    ])
  }, 120_000)

  it("fails a block that does not finish in time", async () => {
    const failures = await checkDocs([{ file: "hangs.md", text: "```ts\nsetInterval(() => {}, 1000)\n```\n" }], { root: repo, timeoutMs: 1_000 })
    expect(failures).toEqual([expect.stringMatching(/^hangs\.md:1 \(ts block\): did not finish within 1 s/)])
  }, 120_000)
})
