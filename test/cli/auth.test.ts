/**
 * `--auth` and `logout`, run as the built binary against the example server
 * protected by the `authorization` option, with the test as the browser:
 * it reads the authorization URL the CLI prints, has the authorization
 * server approve it and follows the redirect to the CLI's loopback listener.
 */
import * as fs from "node:fs"
import { afterEach, beforeAll, describe, expect, it } from "vitest"
import { type ProtectedServer, approve, authorizationUrl, signIn, startProtectedServer } from "./protectedServer.ts"
import { ensureBuilt, runCli, startCli } from "./runCli.ts"
import { tempFiles } from "../fixtures/temp-files.ts"

const tempFile = tempFiles("effect-mcp-cli-")

const TIMEOUT = 120_000
let server: ProtectedServer | undefined

beforeAll(() => ensureBuilt())
afterEach(async () => {
  await server?.close()
  server = undefined
})

/** Every token the authorization server handed out: none may show in the CLI's output. */
const secrets = (s: ProtectedServer) => [...s.world.issued, ...s.world.refreshTokens]

const ping = (url: string, store: string, ...more: Array<string>) =>
  ["ping", url, "-c", "1", "--auth", "--token-store", store, ...more]

describe("effect-mcp-transport --auth", () => {
  it("signs in through the browser once; the next run uses the stored token without one", async () => {
    server = await startProtectedServer()
    const store = tempFile("tokens.json")
    const first = startCli(ping(server.url, store))
    const answered = await signIn(first)
    expect(answered.status).toBe(200)
    expect(answered.page).toContain("You can close this tab")
    const r1 = await first.exit
    expect(r1.stderr).toContain(`To sign in to ${server.url}`)
    expect(r1.code, r1.stderr).toBe(0)
    expect(fs.statSync(store).mode & 0o777).toBe(0o600)
    expect(server.world.count("/authorize")).toBe(1)

    const r2 = await runCli([...ping(server.url, store), "--verbose"])
    expect(r2.code, r2.stderr).toBe(0)
    expect(r2.stderr).not.toContain("/authorize?")
    expect(server.world.count("/authorize")).toBe(1)
    for (const secret of secrets(server)) {
      expect(r1.stdout + r1.stderr + r2.stdout + r2.stderr).not.toContain(secret)
    }
  }, TIMEOUT)

  it("refreshes an expired token on a later run, with the client it registered, without a browser", async () => {
    // Expired as soon as it is issued (inside the refresh margin).
    server = await startProtectedServer({ expiresIn: 1 })
    const store = tempFile("tokens.json")
    const first = startCli(ping(server.url, store))
    await signIn(first)
    expect((await first.exit).code).toBe(0)

    const r2 = await runCli(ping(server.url, store))
    expect(r2.code, r2.stderr).toBe(0)
    expect(r2.stderr).not.toContain("/authorize?")
    expect(server.world.count("/token", "refresh_token")).toBeGreaterThanOrEqual(1)
    expect(server.world.count("/register")).toBe(1)
    expect(server.world.count("/authorize")).toBe(1)
    for (const secret of secrets(server)) expect(r2.stdout + r2.stderr).not.toContain(secret)
  }, TIMEOUT)

  it("logout removes the stored sign-in, so the next run signs in again; --all empties the store", async () => {
    server = await startProtectedServer()
    const store = tempFile("tokens.json")
    const first = startCli(ping(server.url, store))
    await signIn(first)
    expect((await first.exit).code).toBe(0)

    const out = await runCli(["logout", server.url, "--token-store", store])
    expect(out.code, out.stderr).toBe(0)
    expect(out.stdout).toContain(`signed out of ${server.url} (1 removed)`)
    const again = await runCli(["logout", server.url, "--token-store", store])
    expect(again.stdout).toContain("no stored sign-in")

    const second = startCli(ping(server.url, store))
    await signIn(second)
    expect((await second.exit).code).toBe(0)
    expect(server.world.count("/authorize")).toBe(2)

    const all = await runCli(["logout", "--all", "--token-store", store, "--json"])
    expect(all.code, all.stderr).toBe(0)
    expect(JSON.parse(all.stdout)).toMatchObject({ removed: 1 })
    expect(JSON.parse(fs.readFileSync(store, "utf8"))).toEqual({ version: 1, tokens: {}, clients: {} })

    const neither = await runCli(["logout", "--token-store", store])
    expect(neither.code).toBe(2)
  }, TIMEOUT)

  it("a redirect with another state, or to another path, does not end the wait; the real one does", async () => {
    server = await startProtectedServer()
    const store = tempFile("tokens.json")
    const cli = startCli(ping(server.url, store))
    const authorization = await authorizationUrl(cli)
    const redirect = await approve(authorization)
    const forged = new URL(redirect)
    forged.searchParams.set("state", "forged")
    const wrongState = await fetch(forged)
    expect(wrongState.status).toBe(400)
    const noState = new URL(redirect)
    noState.searchParams.delete("state")
    expect((await fetch(noState)).status).toBe(400)
    const otherPath = new URL(redirect)
    otherPath.pathname = "/elsewhere"
    expect((await fetch(otherPath)).status).toBe(404)
    expect(cli.child.exitCode).toBeNull()

    const real = await fetch(redirect)
    expect(real.status).toBe(200)
    const r = await cli.exit
    expect(r.code, r.stderr).toBe(0)
    // Used once: the listener is closed after the redirect.
    await expect(fetch(redirect)).rejects.toThrow()
  }, TIMEOUT)

  it("gives up after --login-timeout with a clear message and exit code 5", async () => {
    server = await startProtectedServer()
    const store = tempFile("tokens.json")
    const cli = startCli(ping(server.url, store, "--login-timeout", "1s"))
    const redirect = await approve(await authorizationUrl(cli))
    const r = await cli.exit
    expect(r.code).toBe(5)
    expect(r.stderr).toContain("sign-in timed out")
    expect(r.stderr).toContain("--login-timeout")
    // The listener went with the wait.
    await expect(fetch(redirect)).rejects.toThrow()
  }, TIMEOUT)

  it("--auth needs a URL server and no --bearer; --client-secret needs --client-id (exit 2)", async () => {
    const stdio = await runCli(["ping", "--auth", "--", "node", "server.js"])
    expect(stdio.code).toBe(2)
    expect(stdio.stderr).toContain("--auth applies to URL servers only")
    const bearer = await runCli(["ping", "http://127.0.0.1:9/mcp", "--auth", "--bearer", "x"])
    expect(bearer.code).toBe(2)
    expect(bearer.stderr).toContain("drop --bearer")
    const secret = await runCli(["ping", "http://127.0.0.1:9/mcp", "--auth", "--client-secret", "s", "--token-store", tempFile("t.json")])
    expect(secret.code).toBe(2)
    expect(secret.stderr).toContain("--client-secret needs --client-id")
  }, TIMEOUT)

  it("--grant client_credentials signs in with the client's secret, no browser", async () => {
    server = await startProtectedServer()
    const store = tempFile("tokens.json")
    const r = await runCli(
      ping(server.url, store, "--grant", "client_credentials", "--client-id", "svc", "--client-secret", "svc-secret")
    )
    expect(r.code, r.stderr).toBe(0)
    expect(r.stderr).not.toContain("/authorize?")
    expect(server.world.count("/token", "client_credentials")).toBe(1)
  }, TIMEOUT)

  it("--issuer binds the client credentials to one authorization server: another is refused with nothing sent (exit 7), a non-URL is a usage error", async () => {
    server = await startProtectedServer()
    const store = tempFile("tokens.json")
    const service = ["--grant", "client_credentials", "--client-id", "svc", "--client-secret", "svc-secret"]
    const notUrl = await runCli(ping(server.url, store, ...service, "--issuer", "auth.example.com"))
    expect(notUrl.code).toBe(2)
    expect(notUrl.stderr).toContain("--issuer needs the authorization server's URL")
    const refused = await runCli(ping(server.url, store, ...service, "--issuer", "https://as.example.com"))
    expect(refused.code, refused.stderr).toBe(7)
    expect(refused.stderr).toContain(`names the authorization server ${server.world.issuer}`)
    expect(refused.stderr).toContain(`--issuer ${server.world.issuer}`)
    expect(server.world.count("/token")).toBe(0)
    const allowed = await runCli(ping(server.url, store, ...service, "--issuer", server.world.issuer))
    expect(allowed.code, allowed.stderr).toBe(0)
    expect(server.world.count("/token", "client_credentials")).toBe(1)
  }, TIMEOUT)
})

describe("effect-mcp-transport --config with an auth entry", () => {
  it("signs in with the entry's client credentials and keeps the tokens in its token file", async () => {
    server = await startProtectedServer()
    const store = tempFile("tokens.json")
    const config = tempFile("mcp.json")
    fs.writeFileSync(config, JSON.stringify({
      mcpServers: {
        svc: {
          type: "http",
          url: server.url,
          auth: { clientId: "svc", clientSecret: "svc-secret", grant: "client_credentials", tokenStore: store }
        }
      }
    }))
    const r = await runCli(["ping", "-c", "1", "--config", config, "--server", "svc"])
    expect(r.code, r.stderr).toBe(0)
    expect(server.world.count("/token", "client_credentials")).toBe(1)
    expect(fs.statSync(store).mode & 0o777).toBe(0o600)
    for (const secret of secrets(server)) expect(r.stdout + r.stderr).not.toContain(secret)
  }, TIMEOUT)
})
