/**
 * The token stores: in memory, and in a 0600 file written atomically that
 * refuses a file others can read and contents that are not a store.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect } from "effect"
import * as FileTokenStore from "../../../src/client/auth/FileTokenStore.ts"
import * as OAuthProvider from "../../../src/client/auth/OAuthProvider.ts"
import * as TokenStore from "../../../src/client/auth/TokenStore.ts"
import * as StreamableHttp from "../../../src/client/StreamableHttpClientTransport.ts"
import * as World from "./AuthWorld.ts"

const tokens: TokenStore.Tokens = {
  issuer: "https://as.example",
  resource: "https://mcp.example/mcp",
  accessToken: "at-1",
  tokenType: "Bearer",
  refreshToken: "rt-1",
  expiresAt: 1
}

const tempFile = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "token-store-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
).pipe(Effect.map((dir) => path.join(dir, "tokens.json")))

describe("TokenStore", () => {
  it.effect("the memory store keeps tokens per issuer and resource", () =>
    Effect.gen(function*() {
      const store = yield* TokenStore.makeMemory
      yield* store.update((c) => TokenStore.withTokens(c, tokens))
      yield* store.update((c) => TokenStore.withTokens(c, { ...tokens, issuer: "https://other.example", accessToken: "at-2" }))
      const contents = yield* store.load
      expect(contents.tokens[TokenStore.bindingKey(tokens.issuer, tokens.resource)]!.accessToken).toBe("at-1")
      expect(Object.keys(contents.tokens)).toHaveLength(2)
      yield* store.update((c) => TokenStore.withoutTokens(c, tokens.issuer, tokens.resource))
      expect(Object.keys((yield* store.load).tokens)).toHaveLength(1)
    }))

  it.live("the file store writes a 0600 file through a temporary file, and reads it back", () =>
    Effect.gen(function*() {
      const file = yield* tempFile
      const store = yield* FileTokenStore.make(file)
      expect(yield* store.load).toEqual(TokenStore.empty)
      yield* store.update((c) => TokenStore.withTokens(c, tokens))
      expect(fs.statSync(file).mode & 0o777).toBe(0o600)
      expect(fs.readdirSync(path.dirname(file))).toEqual(["tokens.json"])
      const again = yield* FileTokenStore.make(file)
      expect((yield* again.load).tokens[TokenStore.bindingKey(tokens.issuer, tokens.resource)]).toEqual(tokens)
    }).pipe(Effect.scoped))

  it.live("the file store refuses a file others can read, and corrupt contents, with TokenStoreFailed", () =>
    Effect.gen(function*() {
      const file = yield* tempFile
      fs.writeFileSync(file, JSON.stringify(TokenStore.empty), { mode: 0o644 })
      fs.chmodSync(file, 0o644)
      const store = yield* FileTokenStore.make(file)
      const wide = yield* Effect.flip(store.load)
      expect(wide).toMatchObject({ _tag: "TokenStoreFailed", reason: "permissions" })
      expect(wide.message).toContain(`chmod 600 ${file}`)
      // A write goes through a read: it is refused too, and the file is left as it was.
      expect((yield* Effect.flip(store.update((c) => TokenStore.withTokens(c, tokens)))).reason).toBe("permissions")
      expect(fs.readFileSync(file, "utf8")).toBe(JSON.stringify(TokenStore.empty))
      for (const text of ["{not json", JSON.stringify({ version: 1, tokens: { a: { accessToken: 1 } }, clients: {} }), "[]"]) {
        fs.writeFileSync(file, text)
        fs.chmodSync(file, 0o600)
        expect(yield* Effect.flip(store.load), text).toMatchObject({ _tag: "TokenStoreFailed", reason: "corrupt" })
      }
    }).pipe(Effect.scoped))

  it.live("the file store's lock file: one left by a process that is gone, or too old, is broken; a live one is waited for, within a bound", () =>
    Effect.gen(function*() {
      const file = yield* tempFile
      const lockFile = `${file}.lock`
      const holder = (pid: number, at: number) => JSON.stringify({ pid, host: os.hostname(), at, id: "other" })
      const gone = spawnSync(process.execPath, ["-e", ""]).pid!
      fs.writeFileSync(lockFile, holder(gone, Date.now()))
      yield* (yield* FileTokenStore.make(file)).update((c) => TokenStore.withTokens(c, tokens))
      expect(fs.existsSync(lockFile)).toBe(false)

      // This process is alive, but the lock is older than staleLockAge: its holder hung.
      fs.writeFileSync(lockFile, holder(process.pid, Date.now() - 120_000))
      yield* (yield* FileTokenStore.make(file)).update((c) => TokenStore.withoutTokens(c, tokens.issuer, tokens.resource))
      expect(fs.existsSync(lockFile)).toBe(false)

      // Held by a live process: the store waits lockTimeout, then fails without touching the file.
      fs.writeFileSync(lockFile, holder(process.pid, Date.now()))
      const before = fs.readFileSync(file, "utf8")
      const store = yield* FileTokenStore.make(file, { lockTimeout: "200 millis" })
      const e = yield* Effect.flip(store.update((c) => TokenStore.withTokens(c, tokens)))
      expect(e).toMatchObject({ _tag: "TokenStoreFailed", reason: "locked" })
      expect(e.message).toContain(lockFile)
      expect(fs.readFileSync(file, "utf8")).toBe(before)
      expect(fs.existsSync(lockFile)).toBe(true)
    }).pipe(Effect.scoped))

  it.live("a provider on a file store survives a restart: the second run sends the stored token without signing in", () =>
    Effect.gen(function*() {
      const file = yield* tempFile
      const world = yield* World.make()
      const run = (user: ReturnType<typeof World.browser>) =>
        Effect.gen(function*() {
          const auth = yield* OAuthProvider.make({ redirectUrl: "http://127.0.0.1:1/cb", interaction: user.interaction })
            .pipe(Effect.provideServiceEffect(TokenStore.TokenStore, FileTokenStore.make(file)))
          const t = yield* StreamableHttp.make({ url: world.mcpUrl, auth, protocolVersion: "2025-11-25" })
          yield* t.request("tools/list", {})
        }).pipe(Effect.scoped)
      const first = World.browser()
      yield* run(first)
      expect(fs.statSync(file).mode & 0o777).toBe(0o600)
      const second = World.browser()
      yield* run(second)
      expect(first.opened).toHaveLength(1)
      expect(second.opened).toHaveLength(0)
      expect(world.seen.filter((s) => s.path === "/mcp").map((s) => s.headers.authorization !== undefined))
        .toEqual([false, true, true])
      // A corrupt store is a typed error for the request, not a silent sign-in.
      fs.writeFileSync(file, "{")
      const auth = yield* OAuthProvider.make({}).pipe(Effect.provideServiceEffect(TokenStore.TokenStore, FileTokenStore.make(file)))
      const t = yield* StreamableHttp.make({ url: world.mcpUrl, auth, protocolVersion: "2025-11-25" })
      expect(yield* Effect.flip(t.request("tools/list", {}))).toMatchObject({ _tag: "TokenStoreFailed", reason: "corrupt" })
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))
})
