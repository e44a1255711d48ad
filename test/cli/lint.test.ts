/**
 * `effect-mcp-transport lint`: SchemaLint's rules on their own, and the
 * command (the built binary) against servers: one whose tools are written to
 * break each rule (test/cli/fixtures/lint-server.ts), the example server,
 * server-everything and the SDK v2 server.
 */
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import * as SchemaLint from "../../src/cli/SchemaLint.ts"
import { ensureBuilt, exampleServer, NODE, runCli } from "./runCli.ts"

const ROOT = path.resolve(import.meta.dirname, "../..")
const fixture = ["--", NODE, path.join(ROOT, "test/cli/fixtures/lint-server.ts")]
const everything = ["--", NODE, path.join(ROOT, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "stdio"]
const sdk2 = ["--", NODE, path.join(ROOT, "test/fixtures/peers/sdk2-server.ts"), "--stdio"]

const TIMEOUT = 120_000

const good = {
  name: "search",
  description: "Searches the index.",
  inputSchema: {
    type: "object",
    properties: { q: { type: "string", description: "What to look for" } },
    required: ["q"]
  }
}

const messages = (tools: ReadonlyArray<unknown>) => SchemaLint.lint(tools).map((p) => `${p.severity} ${p.path}: ${p.message}`)

describe("SchemaLint", () => {
  it("finds nothing in a described tool with a 2020-12 object schema", () => {
    expect(SchemaLint.lint([good])).toEqual([])
  })

  it("reports keyword values of the wrong type as errors", () => {
    const found = messages([{
      ...good,
      inputSchema: {
        type: "object",
        properties: {
          q: { type: "text", description: "x" },
          n: { type: "integer", minimum: "0", maxLength: -1, description: "x" },
          tags: { type: "array", items: [{ type: "string" }], description: "x" },
          p: { type: "string", pattern: "([a-z", description: "x" },
          e: { enum: "a", description: "x" },
          m: { type: "number", exclusiveMinimum: true, description: "x" }
        },
        required: "q"
      }
    }])
    expect(found).toEqual(expect.arrayContaining([
      expect.stringMatching(/^error inputSchema\.properties\.q\.type: "text" is not a JSON Schema type/),
      expect.stringMatching(/^error inputSchema\.properties\.n\.minimum: must be a number/),
      expect.stringMatching(/^error inputSchema\.properties\.n\.maxLength: must be a non-negative integer/),
      expect.stringMatching(/^error inputSchema\.properties\.tags\.items: .*"prefixItems"/),
      expect.stringMatching(/^error inputSchema\.properties\.p\.pattern: .*not a valid regular expression/),
      expect.stringMatching(/^error inputSchema\.properties\.e\.enum: must be an array/),
      expect.stringMatching(/^error inputSchema\.properties\.m\.exclusiveMinimum: .*draft-04/),
      expect.stringMatching(/^error inputSchema\.required: must be an array of strings/)
    ]))
  })

  it("resolves local $refs and warns of older dialects", () => {
    const found = messages([{
      ...good,
      inputSchema: {
        $schema: "http://json-schema.org/draft-07/schema#",
        type: "object",
        properties: { a: { $ref: "#/definitions/A", description: "x" }, b: { $ref: "#/$defs/Missing", description: "x" } },
        definitions: { A: { type: "string" } }
      }
    }])
    expect(found).toEqual(expect.arrayContaining([
      expect.stringMatching(/^warning inputSchema\.\$schema: the dialect is http:\/\/json-schema\.org\/draft-07/),
      expect.stringMatching(/^warning inputSchema\.definitions: .*"\$defs"/),
      "error inputSchema.properties.b.$ref: #/$defs/Missing does not resolve within the schema"
    ]))
    expect(found.some((m) => m.includes("properties.a.$ref"))).toBe(false)
  })

  it("checks names, descriptions, object schemas and x-mcp-header annotations", () => {
    const found = messages([
      { name: "has space", inputSchema: { type: "object", properties: { q: { type: "string" } } } },
      { ...good, name: "dup" },
      { ...good, name: "dup" },
      { ...good, name: "arr", inputSchema: { type: "array" }, outputSchema: { type: "string" } },
      {
        ...good,
        name: "hdr",
        inputSchema: { type: "object", properties: { tags: { type: "array", description: "x", "x-mcp-header": "Tags" } } }
      }
    ])
    expect(found).toEqual(expect.arrayContaining([
      expect.stringMatching(/^warning name: "has space": tool names should use only/),
      "warning description: no description: a model has only the name to go by",
      "warning inputSchema.properties.q: no description: a model has only the name to go by",
      "error name: another tool has the same name",
      "error inputSchema.type: an inputSchema must be an object schema (type: \"object\")",
      "error outputSchema.type: an outputSchema must be an object schema (type: \"object\")",
      expect.stringMatching(/^error inputSchema: x-mcp-header "Tags" is on a property of type "array".*: a client drops the tool$/)
    ]))
  })
})

describe.concurrent("effect-mcp-transport lint", () => {
  it("reports each problem, follows every page, and exits 1 on an error", async () => {
    ensureBuilt()
    const tools = [good, { ...good, name: "broken", inputSchema: { type: "object", properties: { q: { type: "strin", description: "x" } } } }]
    const r = await runCli(["lint", ...fixture], { env: { LINT_TOOLS: JSON.stringify(tools) } })
    expect(r.code).toBe(1)
    expect(r.stdout).toBe(
      "broken: error: inputSchema.properties.q.type: \"strin\" is not a JSON Schema type (null, boolean, object, array, number, string, integer)\n" +
        "2 tools: 1 error, 0 warnings\n"
    )
  }, TIMEOUT)

  it("--json prints the report; warnings alone exit 0, or 1 with --strict", async () => {
    const tools = [{ ...good, description: undefined }]
    const env = { LINT_TOOLS: JSON.stringify(tools) }
    const r = await runCli(["lint", "--json", ...fixture], { env })
    expect(r.code).toBe(0)
    expect(JSON.parse(r.stdout)).toEqual({
      tools: 1,
      errors: 0,
      warnings: 1,
      problems: [{ tool: "search", severity: "warning", path: "description", message: "no description: a model has only the name to go by" }]
    })
    expect((await runCli(["lint", "--strict", ...fixture], { env })).code).toBe(1)
  }, TIMEOUT)

  it("finds no error in the example server, server-everything or the SDK v2 server", async () => {
    for (const server of [exampleServer, everything, sdk2]) {
      const r = await runCli(["lint", "--json", ...server])
      expect(r.code, r.stderr).toBe(0)
      const report = JSON.parse(r.stdout)
      expect(report.tools).toBeGreaterThan(0)
      expect(report.errors).toBe(0)
    }
  }, TIMEOUT)
})
