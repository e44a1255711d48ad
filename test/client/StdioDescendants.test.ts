/**
 * Processes a stdio server started outside its process group end with the
 * transport's scope: a server behind a `setsid` wrapper, and detached helpers
 * (a session of their own) whether their server is still running at teardown
 * or died before it. Every pid comes from the fixtures' `--pid-file`, and the
 * file's finalizer SIGKILLs whatever is left, so a failing test leaves nothing
 * running.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import { readStat } from "../../src/client/internal/ProcessTree.ts"
import { awaitGone, isAlive, pidFile, readPids, setsidWrapperPath, testServer, testServerPath } from "../fixtures/stdio-helpers.ts"

const linux = process.platform === "linux"

/** The process group a pid belongs to, from /proc (the premise of each test: not the server's). */
const groupOf = (pid: number) => readStat(pid)?.pgid

const helperOf = (t: StdioClientTransport.StdioClientTransportShape, params: object = {}) =>
  Effect.map(t.request("test/spawnDetachedHelper", params), (r) => (r as { pid: number }).pid)

/** Polls a condition with a bound; the sampler has no event to wait on. */
const eventually = <A>(effect: Effect.Effect<A>, ok: (a: A) => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 500; i++) {
      const a = yield* effect
      if (ok(a)) return a
      yield* Effect.sleep("10 millis")
    }
    return yield* Effect.die(new Error("condition not reached"))
  })

describe.runIf(linux)("StdioClientTransport: descendants outside the process group", () => {
  it.live("a server behind a setsid wrapper that ignores stdin EOF ends with the scope", () =>
    Effect.gen(function*() {
      const pids = yield* pidFile
      const scope = yield* Scope.make()
      const t = yield* StdioClientTransport.make({
        ...testServer(),
        command: process.execPath,
        args: [setsidWrapperPath, process.execPath, testServerPath, "--ignore-stdin-eof", `--pid-file=${pids}`]
      }).pipe(Scope.provide(scope))
      yield* t.request("ping")
      const [server] = readPids(pids)
      expect(server).toBeDefined()
      expect(server).not.toBe(t.pid)
      expect(groupOf(server!)).not.toBe(t.pid)
      yield* Scope.close(scope, Exit.void)
      expect(isAlive(t.pid)).toBe(false)
      expect(yield* awaitGone(server!)).toBe(true)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("a detached helper of a server that exits on stdin EOF ends with the scope", () =>
    Effect.gen(function*() {
      const pids = yield* pidFile
      const scope = yield* Scope.make()
      const t = yield* StdioClientTransport.make(testServer([`--pid-file=${pids}`])).pipe(Scope.provide(scope))
      const helper = yield* helperOf(t)
      expect(readPids(pids)).toEqual([t.pid, helper])
      expect(groupOf(helper)).toBe(helper)
      yield* Scope.close(scope, Exit.void)
      expect(isAlive(t.pid)).toBe(false)
      expect(yield* awaitGone(helper)).toBe(true)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("a detached helper that ignores SIGTERM gets SIGKILL after killAfter", () =>
    Effect.gen(function*() {
      const pids = yield* pidFile
      const scope = yield* Scope.make()
      const t = yield* StdioClientTransport.make(
        testServer([`--pid-file=${pids}`], { shutdown: { gracePeriod: "100 millis", killAfter: "200 millis" } })
      ).pipe(Scope.provide(scope))
      const helper = yield* helperOf(t, { ignoreSigterm: true })
      yield* Scope.close(scope, Exit.void)
      expect(yield* awaitGone(helper)).toBe(true)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("a helper recorded while its server ran still ends with the scope after the server died", () =>
    Effect.gen(function*() {
      const pids = yield* pidFile
      const scope = yield* Scope.make()
      const t = yield* StdioClientTransport.make(
        testServer([`--pid-file=${pids}`], { shutdown: { descendantSampleInterval: "20 millis" } })
      ).pipe(Scope.provide(scope))
      const helper = yield* helperOf(t)
      yield* eventually(t.descendants, (ds) => ds.includes(helper))
      yield* Effect.flip(t.request("test/exit", { code: 0 }))
      const closed = yield* t.awaitClosed
      expect(closed.reason).toBe("process exited")
      // Orphaned now: no parent link leads from the server to it any more.
      expect(isAlive(helper)).toBe(true)
      expect(yield* t.descendants).toEqual([helper])
      yield* Scope.close(scope, Exit.void)
      expect(yield* awaitGone(helper)).toBe(true)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("descendantSampleInterval: false ends the process group alone", () =>
    Effect.gen(function*() {
      const pids = yield* pidFile
      const scope = yield* Scope.make()
      const t = yield* StdioClientTransport.make(
        testServer([`--pid-file=${pids}`], { shutdown: { descendantSampleInterval: false } })
      ).pipe(Scope.provide(scope))
      const helper = yield* helperOf(t)
      expect(yield* t.descendants).toEqual([])
      yield* Scope.close(scope, Exit.void)
      expect(isAlive(t.pid)).toBe(false)
      // Left to the pid file's finalizer.
      expect(isAlive(helper)).toBe(true)
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live("a server with no descendants records none", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const t = yield* StdioClientTransport.make(testServer([], { shutdown: { descendantSampleInterval: "10 millis" } }))
        .pipe(Scope.provide(scope))
      yield* t.request("ping")
      expect(yield* t.descendants).toEqual([])
      yield* Scope.close(scope, Exit.void)
      expect(isAlive(t.pid)).toBe(false)
    }).pipe(Effect.provide(NodeServices.layer)))
})
