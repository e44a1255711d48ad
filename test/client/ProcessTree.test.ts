/**
 * ProcessTree against real processes: /proc parsing, the two ways of listing
 * children, and a tracker that keeps a descendant after its parent died.
 * Every process a test starts is SIGKILLed in `afterEach`, pass or fail.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { afterEach, describe, expect, it } from "vitest"
import * as ProcessTree from "../../src/client/internal/ProcessTree.ts"
import { isAlive } from "../fixtures/stdio-helpers.ts"

const started = new Set<number>()
afterEach(() => {
  for (const pid of started) {
    try {
      process.kill(pid, "SIGKILL")
    } catch {
      // Already gone.
    }
  }
  started.clear()
})

/** Resolves with the first stdout line of a child once it is written. */
const firstLine = (child: ChildProcess): Promise<string> =>
  new Promise((resolve, reject) => {
    let text = ""
    child.stdout!.on("data", (chunk: Buffer) => {
      text += chunk.toString("utf8")
      const nl = text.indexOf("\n")
      if (nl >= 0) resolve(text.slice(0, nl))
    })
    child.once("exit", () => reject(new Error("exited before writing a line")))
  })

/** A process that starts a detached helper (its own session), prints the helper's pid and stays. */
const parentWithHelper = async () => {
  const source = "const { spawn } = require('node:child_process');" +
    "const h = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { detached: true, stdio: 'ignore' });" +
    "h.unref(); process.stdout.write(h.pid + '\\n'); setInterval(() => {}, 1000)"
  const parent = spawn(process.execPath, ["-e", source], { stdio: ["ignore", "pipe", "ignore"] })
  started.add(parent.pid!)
  const helper = Number(await firstLine(parent))
  started.add(helper)
  return { parent, helper }
}

const exited = (child: ChildProcess) =>
  new Promise<void>((resolve) => child.exitCode !== null || child.signalCode !== null ? resolve() : child.once("exit", () => resolve()))

/** Bounded poll for a condition no event announces (a reparenting, a kill's effect). */
const until = async (ok: () => boolean) => {
  for (let i = 0; i < 500 && !ok(); i++) await new Promise((resolve) => setTimeout(resolve, 10))
  return ok()
}

describe("ProcessTree.parseStat", () => {
  it("counts fields from the last parenthesis, so a command name with spaces and parentheses parses", () => {
    const text = "4150 (a) b (c)) S 4149 4150 4150 0 -1 4194560 5650 369985 0 1 1 3 739 89 20 0 1 0 18152 5124096 974"
    expect(ProcessTree.parseStat(text)).toEqual({ pid: 4150, state: "S", ppid: 4149, pgid: 4150, startTime: 18152 })
  })

  it("parses a command name that is not UTF-8 as the file is read, decoded as UTF-8", () => {
    const bytes = Buffer.concat([
      Buffer.from("4150 (srv"),
      Buffer.from([0xff, 0xc3, 0x29, 0xe2, 0x82]),
      Buffer.from(") S 4149 4150 4150 0 -1 4194560 5650 369985 0 1 1 3 739 89 20 0 1 0 18152 5124096 974")
    ])
    expect(ProcessTree.parseStat(bytes.toString("utf8"))).toEqual({ pid: 4150, state: "S", ppid: 4149, pgid: 4150, startTime: 18152 })
  })

  it("rejects text that is not a stat line", () => {
    expect(ProcessTree.parseStat("")).toBeUndefined()
    expect(ProcessTree.parseStat("12 (x) S 1")).toBeUndefined()
  })
})

describe.runIf(ProcessTree.supported)("ProcessTree on /proc", () => {
  it("reads this process's parent, group and start time; a pid that does not exist reads as undefined", () => {
    const self = ProcessTree.readStat(process.pid)
    expect(self).toMatchObject({ pid: process.pid, ppid: process.ppid, state: "R" })
    expect(Number.isInteger(self!.startTime) && self!.startTime > 0).toBe(true)
    expect(ProcessTree.readStat(2 ** 22 + 1)).toBeUndefined()
  })

  it("the thread children files and the /proc scan list the same children", async () => {
    const { parent, helper } = await parentWithHelper()
    expect(ProcessTree.childrenFromTasks(parent.pid!)).toEqual([helper])
    expect(ProcessTree.scanChildLister()(parent.pid!)).toEqual([helper])
    expect(ProcessTree.childrenFromTasks(process.pid)).toContain(parent.pid)
  })

  for (const [name, lister] of [["thread children files", ProcessTree.taskChildLister], [
    "/proc scan",
    ProcessTree.scanChildLister
  ]] as const) {
    it(`a tracker (${name}) keeps a descendant whose parent died and signals it`, async () => {
      const { helper, parent } = await parentWithHelper()
      const tracker = ProcessTree.makeTracker(parent.pid!, { listChildren: lister })
      tracker.sample(true)
      expect(tracker.alive()).toEqual([helper])
      parent.kill("SIGKILL")
      await exited(parent)
      // Reparented: no longer a child of the dead parent, still found from the record.
      expect(await until(() => ProcessTree.readStat(helper)?.ppid !== parent.pid)).toBe(true)
      tracker.sample(false)
      expect(tracker.alive()).toEqual([helper])
      // Members of a group that is signalled anyway are left to that signal (the helper leads its own).
      expect(tracker.signal("SIGKILL", helper)).toBe(0)
      expect(tracker.signal("SIGKILL")).toBe(1)
      // The same signal is not sent twice.
      expect(tracker.signal("SIGKILL")).toBe(0)
      expect(await until(() => !isAlive(helper))).toBe(true)
      expect(tracker.alive()).toEqual([])
    })
  }

  it("a tracker never walks pids that are not a spawned process (0, 1, negative)", () => {
    for (const pid of [-1, 0, 1]) {
      const tracker = ProcessTree.makeTracker(pid)
      tracker.sample(true)
      expect(tracker.alive()).toEqual([])
      expect(tracker.signal("SIGTERM")).toBe(0)
    }
  })

  it("a tracker does not walk from a root that is no longer running", async () => {
    const { parent } = await parentWithHelper()
    const tracker = ProcessTree.makeTracker(parent.pid!)
    tracker.sample(false)
    expect(tracker.alive()).toEqual([])
  })
})
