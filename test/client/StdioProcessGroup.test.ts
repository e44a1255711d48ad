/**
 * The end of a stdio server's process group at teardown: a group that is
 * already empty when the server has exited gets no signal (the spawner is
 * told there is nothing left to end), and a group that still has members
 * gets SIGTERM as before, so that nothing it holds survives the scope. A
 * group whose number names another process since the server was reaped is
 * someone else's, and gets no signal either.
 */
import { NodeServices } from "@effect/platform-node"
import { afterEach, describe, expect, it, vi } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as StdioProcess from "../../src/client/internal/StdioProcess.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import { isAlive, testServer } from "../fixtures/stdio-helpers.ts"

const posix = process.platform !== "win32"

afterEach(() => {
  vi.restoreAllMocks()
})

/** Every `process.kill` aimed at a process group, with a real signal (not the existence probe 0). */
const groupSignals = () => {
  const calls: Array<{ pid: number; signal: unknown }> = []
  const kill = process.kill.bind(process)
  vi.spyOn(process, "kill").mockImplementation((pid: number, signal?: string | number) => {
    if (pid < 0 && signal !== 0) calls.push({ pid, signal })
    return kill(pid, signal)
  })
  return calls
}

const groupExists = (pgid: number): boolean => {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

const exited = (child: ChildProcess) =>
  Effect.callback<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    child.once("exit", () => resume(Effect.void))
  })

describe.skipIf(!posix)("StdioProcess and the server's process group", () => {
  it.live("a server that exits on stdin EOF and leaves its group empty gets no signal at teardown", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const t = yield* StdioClientTransport.make(testServer()).pipe(Scope.provide(scope))
      yield* t.request("ping")
      const signals = groupSignals()
      yield* Scope.close(scope, Exit.void)
      expect(isAlive(t.pid)).toBe(false)
      expect(signals).toEqual([])
      const closed = yield* t.awaitClosed
      expect(closed.reason).toBe("transport scope closed")
    }).pipe(Effect.provide(NodeServices.layer)))

  it.live("a server that exits on stdin EOF with a member left in its group: the group gets SIGTERM, the member ends", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const t = yield* StdioClientTransport.make(testServer()).pipe(Scope.provide(scope))
      const { pid: grandchild } = (yield* t.request("test/spawnGrandchild")) as { pid: number }
      const signals = groupSignals()
      yield* Scope.close(scope, Exit.void)
      expect(signals).toContainEqual({ pid: -t.pid, signal: "SIGTERM" })
      expect(isAlive(t.pid)).toBe(false)
      expect(isAlive(grandchild)).toBe(false)
    }).pipe(Effect.provide(NodeServices.layer)))

  it.live("a server that crashed and left its group empty: its group's number gets no signal when the scope closes later", () =>
    Effect.gen(function*() {
      for (const code of [3, 0]) {
        const scope = yield* Scope.make()
        const t = yield* StdioClientTransport.make(testServer([`--exit-on-start=${code}`])).pipe(Scope.provide(scope))
        const closed = yield* t.awaitClosed
        expect(closed.exitCode).toBe(code)
        // The exit's own handling is over once the events of that turn have run; the scope closes later,
        // when the pid may name another program, leader of its own group: nothing may reach that group.
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
        const signals = groupSignals()
        yield* Scope.close(scope, Exit.void)
        expect(signals).toEqual([])
        vi.restoreAllMocks()
      }
    }).pipe(Effect.provide(NodeServices.layer)))

  it.live("a server that exited with a non-zero code while its group had a member: once the group is empty, the scope's close sends it nothing", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const t = yield* StdioClientTransport.make(testServer()).pipe(Scope.provide(scope))
      const { pid: member } = (yield* t.request("test/spawnGrandchild")) as { pid: number }
      yield* Effect.exit(t.request("test/exit", { code: 3 }))
      expect((yield* t.awaitClosed).exitCode).toBe(3)
      // The member ends (the spawner signals the group of a server that failed) and is reaped: the group
      // is gone, and its number free for anyone.
      while (isAlive(member) || groupExists(t.pid)) yield* Effect.sleep("10 millis")
      const signals = groupSignals()
      yield* Scope.close(scope, Exit.void)
      expect(signals).toEqual([])
    }).pipe(Effect.provide(NodeServices.layer)))

  it.live("a server that ignores stdin EOF is still ended with the scope", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const t = yield* StdioClientTransport.make(testServer(["--ignore-stdin-eof"], {
        shutdown: { gracePeriod: "100 millis", killAfter: "300 millis" }
      })).pipe(Scope.provide(scope))
      yield* t.request("ping")
      const signals = groupSignals()
      yield* Scope.close(scope, Exit.void)
      expect(signals).toContainEqual({ pid: -t.pid, signal: "SIGTERM" })
      expect(isAlive(t.pid)).toBe(false)
    }).pipe(Effect.provide(NodeServices.layer)))

  it.live("leaveGroupAlone: true once the leader has exited alone", () =>
    Effect.gen(function*() {
      const child = spawn(process.execPath, ["-e", "process.stdin.resume()"], {
        detached: true,
        stdio: ["pipe", "ignore", "ignore"]
      })
      child.stdin!.end()
      yield* exited(child)
      expect(StdioProcess.leaveGroupAlone(child.pid!)).toBe(true)
    }))

  it.live("leaveGroupAlone: true when the exited server's pid names another process, leader of its own group", () =>
    Effect.gen(function*() {
      // What a reused pid looks like: a running group leader that is not the server.
      const other = spawn(process.execPath, ["-e", "process.stdin.resume()"], {
        detached: true,
        stdio: ["pipe", "ignore", "ignore"]
      })
      try {
        expect(isAlive(other.pid!)).toBe(true)
        expect(StdioProcess.leaveGroupAlone(other.pid!)).toBe(true)
      } finally {
        other.stdin!.end()
        yield* exited(other)
      }
    }))

  it.live("leaveGroupAlone: false after the leader exited while another member runs", () =>
    Effect.gen(function*() {
      // The leader starts a member in its own group, prints its pid and exits.
      const source = "const { spawn } = require('node:child_process');" +
        "const m = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });" +
        "m.unref(); process.stdout.write(m.pid + '\\n')"
      const leader = spawn(process.execPath, ["-e", source], { detached: true, stdio: ["ignore", "pipe", "ignore"] })
      let out = ""
      leader.stdout!.on("data", (chunk: Buffer) => void (out += chunk.toString("utf8")))
      // `close`: the exit and the whole of stdout.
      yield* Effect.callback<void>((resume) => void leader.once("close", () => resume(Effect.void)))
      const member = Number(out.trim())
      try {
        expect(isAlive(member)).toBe(true)
        expect(StdioProcess.leaveGroupAlone(leader.pid!)).toBe(false)
      } finally {
        process.kill(member, "SIGKILL")
      }
    }))
})
