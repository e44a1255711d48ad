/**
 * Refreshes racing over one token store, against an authorization server
 * that rotates refresh tokens and refuses a reused one with `invalid_grant`
 * (AuthWorld). Real separate Node processes share a token file: one of them
 * refreshes, the others use its tokens, and the file is left holding a
 * valid pair, so a later run needs no sign-in. A store without a lock of its
 * own still never deletes the tokens of the refresh that won.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as FileTokenStore from "../../../src/client/auth/FileTokenStore.ts"
import * as OAuthProvider from "../../../src/client/auth/OAuthProvider.ts"
import * as TokenStore from "../../../src/client/auth/TokenStore.ts"
import * as StreamableHttp from "../../../src/client/StreamableHttpClientTransport.ts"
import * as World from "./AuthWorld.ts"

const FIXTURE = fileURLToPath(new URL("../../fixtures/token-file-client.ts", import.meta.url))
const REDIRECT = "http://127.0.0.1:1/cb"

const tempFile = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "refresh-race-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
).pipe(Effect.map((dir) => path.join(dir, "tokens.json")))

/** A promise and its resolve. */
const gate = <A = void>() => {
  let open!: (value: A) => void
  const opened = new Promise<A>((resolve) => (open = resolve))
  return { open, opened }
}

type Outcome = { readonly ok: true } | { readonly error: string }

/** One run of the fixture client, as a child process; killed with the scope if still running. */
const client = (file: string, url: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(process.execPath, [FIXTURE, file, url, REDIRECT], { stdio: ["ignore", "pipe", "pipe"] })
      const loaded = gate()
      const done = gate<Outcome>()
      let stderr = ""
      child.stderr.on("data", (chunk) => (stderr += chunk))
      createInterface({ input: child.stdout }).on("line", (line) => {
        const message = JSON.parse(line)
        if (message.load === true) loaded.open()
        else done.open(message)
      })
      // "close", not "exit": by then every line of its output has been read.
      child.on("close", (code) => done.open({ error: `exited with ${code} before answering: ${stderr}` }))
      return { child, loaded: loaded.opened, done: done.opened }
    }),
    ({ child }) => Effect.sync(() => void (child.exitCode === null && child.kill()))
  )

/** Signs in once in this process (the browser played by the test), leaving tokens that are already due for refresh. */
const signIn = (world: World.AuthWorld, store: TokenStore.TokenStoreShape) =>
  Effect.gen(function*() {
    const auth = yield* OAuthProvider.make({ redirectUrl: REDIRECT, interaction: World.browser().interaction }).pipe(
      Effect.provideService(TokenStore.TokenStore, store)
    )
    const t = yield* StreamableHttp.make({ url: world.mcpUrl, auth, protocolVersion: "2026-07-28" })
    yield* t.request("tools/list", {})
  }).pipe(Effect.scoped)

const onlyTokens = (contents: TokenStore.Contents) => {
  const all = Object.values(contents.tokens)
  expect(all).toHaveLength(1)
  return all[0]!
}

describe("OAuth: refreshes racing over one token store", () => {
  it.live("processes sharing a token file refresh once; the others use the new tokens, and a later run needs no sign-in", () =>
    Effect.gen(function*() {
      const RUNS = 3
      const file = yield* tempFile
      const everyRunRead = gate()
      const firstRunDone = gate()
      let racing = false
      // The new pair is handed out only once every run has read the expired one; a refusal only once a run used the new pair.
      const world = yield* World.make({
        expiresIn: 1,
        beforeRefreshAnswer: (outcome) =>
          !racing ? Promise.resolve() : outcome === "rotated" ? everyRunRead.opened : firstRunDone.opened
      })
      yield* signIn(world, yield* FileTokenStore.make(file))
      const signedIn = onlyTokens(yield* (yield* FileTokenStore.make(file)).load)
      const refreshesBefore = world.count("/token", "refresh_token")
      // The refreshed pair is not due: a run that reads the file only after the refresh uses it, however late.
      world.knobs.expiresIn = 3600
      racing = true

      const runs = yield* Effect.all(Array.from({ length: RUNS }, () => client(file, world.mcpUrl)))
      void Promise.all(runs.map((r) => r.loaded)).then(() => everyRunRead.open())
      void Promise.race(runs.map((r) => r.done)).then(() => firstRunDone.open())
      const outcomes = yield* Effect.promise(() => Promise.all(runs.map((r) => r.done)))

      // The file still holds a pair the authorization server takes.
      const after = onlyTokens(yield* (yield* FileTokenStore.make(file)).load)
      expect(after.refreshToken).not.toBe(signedIn.refreshToken)
      expect(world.refreshTokens.has(after.refreshToken!)).toBe(true)
      expect(outcomes).toEqual(Array.from({ length: RUNS }, () => ({ ok: true })))
      expect(world.count("/token", "refresh_token") - refreshesBefore).toBe(1)
      expect(fs.existsSync(`${file}.lock`)).toBe(false)

      // A run that reads the file after the refresh uses the new pair as it is.
      const late = yield* client(file, world.mcpUrl)
      expect(yield* Effect.promise(() => late.done)).toEqual({ ok: true })
      expect(world.count("/token", "refresh_token") - refreshesBefore).toBe(1)

      // Once that pair is due, a later run refreshes with it; nobody signs in again.
      yield* (yield* FileTokenStore.make(file)).update((contents) => ({
        ...contents,
        tokens: Object.fromEntries(
          Object.entries(contents.tokens).map(([key, tokens]) => [key, { ...tokens, expiresAt: Date.now() - 1_000 }])
        )
      }))
      const later = yield* client(file, world.mcpUrl)
      expect(yield* Effect.promise(() => later.done)).toEqual({ ok: true })
      expect(world.count("/authorize")).toBe(1)
      expect(world.count("/token", "refresh_token") - refreshesBefore).toBe(2)
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)), 180_000)

  it.live("a store without a lock of its own: the refused refresh deletes nothing, and its request goes on with the winner's tokens", () =>
    Effect.gen(function*() {
      const memory = yield* TokenStore.makeMemory
      // Only `load` and `update`, as a keychain store might be: each provider serializes only itself.
      const plain: TokenStore.TokenStoreShape = { load: memory.load, update: memory.update }
      const refusedArrived = gate()
      const winnerDone = gate()
      let racing = false
      // The winner's answer waits for the loser's request; the loser's refusal, for the winner to have stored and used its tokens.
      const world = yield* World.make({
        expiresIn: 1,
        beforeRefreshAnswer: (outcome) => {
          if (!racing) return Promise.resolve()
          if (outcome === "rotated") return refusedArrived.opened
          refusedArrived.open()
          return winnerDone.opened
        }
      })
      yield* signIn(world, plain)
      const signedIn = onlyTokens(yield* plain.load)
      const refreshesBefore = world.count("/token", "refresh_token")
      racing = true
      const run = Effect.gen(function*() {
        const auth = yield* OAuthProvider.make({ redirectUrl: REDIRECT }).pipe(Effect.provideService(TokenStore.TokenStore, plain))
        const t = yield* StreamableHttp.make({ url: world.mcpUrl, auth, protocolVersion: "2026-07-28" })
        yield* t.request("tools/list", {})
      }).pipe(Effect.scoped, Effect.ensuring(Effect.sync(() => winnerDone.open())))
      yield* Effect.all([run, run], { concurrency: 2 })
      expect(world.count("/token", "refresh_token") - refreshesBefore).toBe(2)
      const after = onlyTokens(yield* plain.load)
      expect(after.refreshToken).not.toBe(signedIn.refreshToken)
      expect(world.refreshTokens.has(after.refreshToken!)).toBe(true)
      expect(world.count("/authorize")).toBe(1)
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)), 30_000)

  it.effect("a refusal deletes the refresh token it refused, and nothing stored since", () =>
    Effect.gen(function*() {
      const stored: TokenStore.Tokens = {
        issuer: "https://as.example",
        resource: "https://mcp.example/mcp",
        accessToken: "at-2",
        tokenType: "Bearer",
        refreshToken: "rt-2"
      }
      const contents = TokenStore.withTokens(TokenStore.empty, stored)
      expect(TokenStore.withoutRefused(contents, stored.issuer, stored.resource, "rt-1")).toBe(contents)
      expect(TokenStore.withoutRefused(contents, stored.issuer, stored.resource, "rt-2").tokens).toEqual({})
    }))
})
