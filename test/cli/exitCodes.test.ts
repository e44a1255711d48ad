/**
 * The exit code each typed failure maps to, checked on the values themselves
 * (the process-level runs live in errors.test.ts).
 */
import { describe, expect, it } from "vitest"
import { ExitCode, exitCodeOf } from "../../src/cli/Output.ts"
import { InputRequired } from "../../src/cli/ServerQuestions.ts"
import { HttpError, RedirectRefused } from "../../src/McpError.ts"

describe("exitCodeOf", () => {
  it("a refused redirect is a connection failure, like any other HTTP failure", () => {
    const refused = new RedirectRefused({
      status: 307,
      location: "http://127.0.0.1:9/mcp",
      url: "http://127.0.0.1:8/mcp",
      method: "POST",
      reason: "another origin"
    })
    expect(exitCodeOf(refused)).toBe(ExitCode.Connect)
    expect(exitCodeOf(new HttpError({ status: 500, body: "" }))).toBe(
      ExitCode.Connect
    )
  })

  it("a question the command could not answer has its own code, 6", () => {
    expect(exitCodeOf(new InputRequired({ question: "Your name?", missing: ["name"] }))).toBe(ExitCode.InputRequired)
    expect(ExitCode.InputRequired).toBe(6)
  })
})
