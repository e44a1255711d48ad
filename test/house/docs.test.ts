/**
 * The documentation's ```ts blocks type-check against the built package and
 * run (docBlocks.ts; the block markers are documented in docs/README.md).
 * Needs `npm run build` first, as `npm test` does.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { checkDocs, extractBlocks } from "./docBlocks.ts"

const repo = fileURLToPath(new URL("../..", import.meta.url))

const documents = ["README.md", ...readdirSync(join(repo, "docs"), { recursive: true, encoding: "utf8" }).map((path) => `docs/${path}`)]
  .filter((path) => path.endsWith(".md"))
  .sort()

describe("documentation code blocks", () => {
  it("include docs/README.md", () => {
    expect(documents).toContain("docs/README.md")
  })

  it("type-check against the built package and run", async () => {
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

  it("fails a block that does not finish in time", async () => {
    const failures = await checkDocs([{ file: "hangs.md", text: "```ts\nsetInterval(() => {}, 1000)\n```\n" }], { root: repo, timeoutMs: 1_000 })
    expect(failures).toEqual([expect.stringMatching(/^hangs\.md:1 \(ts block\): did not finish within 1 s/)])
  }, 120_000)
})
