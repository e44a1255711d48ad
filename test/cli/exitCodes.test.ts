/**
 * The exit code each typed failure maps to, checked on the values themselves
 * (the process-level runs live in errors.test.ts).
 */
import { describe, expect, it } from "vitest"
import * as Duration from "effect/Duration"
import { ForbiddenAddress, InteractionRequired, TokenStoreFailed, UserDenied } from "../../src/AuthError.ts"
import { LoginTimeout, LoopbackUnavailable } from "../../src/cli/LoopbackRedirect.ts"
import { ConnectError, ExitCode, exitCodeOf } from "../../src/cli/Output.ts"
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

  it("a failed sign-in is 7, while connecting too; a sign-in that timed out is 5", () => {
    const failures = [
      new UserDenied({ issuer: "http://127.0.0.1:1" }),
      new InteractionRequired({ serverUrl: "http://127.0.0.1:1/mcp", reason: "no interactive handler is configured" }),
      new TokenStoreFailed({ path: "/tmp/t.json", reason: "permissions", detail: "mode 644" }),
      new LoopbackUnavailable({ port: 1, reason: "EACCES" }),
      new ForbiddenAddress({
        url: "https://10.0.0.1/.well-known/oauth-authorization-server",
        serverUrl: "https://mcp.example.com/mcp",
        address: "10.0.0.1",
        reason: "a private network address (10.0.0.0/8)"
      })
    ]
    for (const failure of failures) {
      expect(exitCodeOf(failure)).toBe(ExitCode.Auth)
      expect(exitCodeOf(new ConnectError({ target: "http://127.0.0.1:1/mcp", cause: failure }))).toBe(7)
    }
    const timedOut = new LoginTimeout({ after: Duration.minutes(5) })
    expect(exitCodeOf(new ConnectError({ target: "http://127.0.0.1:1/mcp", cause: timedOut }))).toBe(ExitCode.Timeout)
  })
})
