/**
 * `bridge --http` as a user runs it (the built binary: `npm run build`
 * first): `--max-upstreams` refuses the session past the cap with 503 and
 * `Retry-After`, the `--auth-*` flags make the endpoint refuse a request
 * without a bearer token with 401, and misused flags are usage errors.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { NODE, runCli, startCli } from "../cli/runCli.ts"
import { initializeBody, post } from "../server/http/helpers.ts"
import { routerServer } from "./helpers.ts"

const listening = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const cli = startCli(["bridge", "--http", "--port", "0", ...args, "--", NODE, routerServer])
    yield* Effect.addFinalizer(() => Effect.sync(() => cli.child.kill("SIGKILL")))
    yield* Effect.promise(() => cli.waitFor(/listening (http:\S+)/))
    return /listening (http:\S+)/.exec(cli.stderr())![1]!
  })

const initialize = (url: string) =>
  Effect.promise(async () => {
    const res = await post(url, initializeBody(1))
    await res.text()
    return res
  })

describe("effect-mcp-transport bridge --http: admission flags (built binary)", { timeout: 120_000 }, () => {
  it.live("--max-upstreams 1: the second session gets 503 with Retry-After", () =>
    Effect.gen(function*() {
      const url = yield* listening(["--max-upstreams", "1"])
      expect((yield* initialize(url)).status).toBe(200)
      const refused = yield* initialize(url)
      expect(refused.status).toBe(503)
      expect(refused.headers.get("retry-after")).toBe("5")
    }).pipe(Effect.scoped))

  it.live("--auth-issuer with --auth-jwks: an initialize without a token gets 401 with the resource metadata", () =>
    Effect.gen(function*() {
      const url = yield* listening([
        "--auth-issuer",
        "https://auth.example.com",
        "--auth-jwks",
        "https://auth.example.com/jwks.json",
        "--auth-scope",
        "mcp"
      ])
      const refused = yield* initialize(url)
      expect(refused.status).toBe(401)
      expect(refused.headers.get("www-authenticate")).toMatch(/^Bearer resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp", scope="mcp"/)
      const metadata = yield* Effect.promise(async () => {
        const res = await fetch(new URL("/.well-known/oauth-protected-resource/mcp", url))
        return (await res.json()) as { resource: string; authorization_servers: ReadonlyArray<string> }
      })
      expect(metadata).toMatchObject({ resource: url, authorization_servers: ["https://auth.example.com"] })
    }).pipe(Effect.scoped))

  it.live("misused admission flags are usage errors (exit 2, one line)", () =>
    Effect.promise(async () => {
      const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
        [["--http", "--auth-jwks", "https://a.example/jwks"], "--auth-jwks needs --auth-issuer"],
        [["--http", "--auth-issuer", "https://a.example"], "--auth-issuer needs one of --auth-jwks or --auth-introspection"],
        [
          ["--http", "--auth-issuer", "https://a.example", "--auth-jwks", "https://a.example/j", "--auth-introspection", "https://a.example/i"],
          "--auth-issuer needs one of --auth-jwks or --auth-introspection"
        ],
        [
          ["--http", "--auth-issuer", "https://a.example", "--auth-jwks", "https://a.example/j", "--auth-client-id", "x"],
          "--auth-client-id and --auth-client-secret need --auth-introspection"
        ],
        [["--http", "--auth-issuer", "not a url", "--auth-jwks", "https://a.example/j"], "--auth-issuer needs an http(s) URL, got \"not a url\""],
        [["--stdio", "--max-upstreams", "2"], "--max-upstreams and --auth-issuer need --http"]
      ]
      for (const [args, message] of cases) {
        const result = await runCli(["bridge", ...args, "--", NODE, routerServer])
        expect(result.code).toBe(2)
        expect(result.stderr.trim()).toBe(`effect-mcp-transport: ${message}`)
      }
      const zero = await runCli(["bridge", "--http", "--max-upstreams", "0", "--", NODE, routerServer])
      expect(zero.code).toBe(2)
    }))
})
