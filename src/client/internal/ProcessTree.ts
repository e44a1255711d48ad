/**
 * The descendants of a process on Linux, read from `/proc`, so that what a
 * server started can be ended even after it left the server's process group
 * (`setsid`, `setpgid`, a daemonizing helper).
 *
 * A process is named by its pid and its start time (field 22 of
 * `/proc/PID/stat`, clock ticks since boot): a pid may be reused once its
 * process is reaped, the pair is not. The tracker records every descendant it
 * sees while the tree is intact, because a process whose parent dies is
 * reparented to init (or the nearest subreaper) and can no longer be found by
 * walking down from the server; it is found again by walking down from the
 * recorded descendants that still live.
 *
 * Children are read from `/proc/PID/task/TID/children` (every thread: a
 * multi-threaded server may fork from any of them), a few small reads per
 * process. On a kernel without that file, one pass over `/proc/[0-9]*` /stat
 * per walk gives the parent links instead.
 *
 * Reads are synchronous: procfs files are generated in memory and these are
 * a few hundred bytes each. They are read as UTF-8, which Node reads in one
 * native call, at half the CPU of any other encoding. What is parsed is
 * ASCII; the command name, which may not be, is skipped (see `parseStat`).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs"

export interface ProcessStat {
  readonly pid: number
  readonly ppid: number
  readonly pgid: number
  /** One letter: R, S, D, Z (zombie), T, X (dead)... */
  readonly state: string
  /** Clock ticks after boot at which the process started. */
  readonly startTime: number
}

/** `/proc` can tell what a process started (Linux). Elsewhere the tracker records nothing. */
export const supported: boolean = process.platform === "linux" && existsSync(`/proc/${process.pid}/stat`)

/** Parses the text of `/proc/PID/stat`; the command name may hold spaces and parentheses, so fields count from its last `)`. */
export const parseStat = (text: string): ProcessStat | undefined => {
  const close = text.lastIndexOf(")")
  if (close < 0) return undefined
  const pid = Number(text.slice(0, text.indexOf(" ")))
  const fields = text.slice(close + 2).split(" ")
  // fields[0] is field 3 of proc(5): state, ppid, pgrp, ... starttime is field 22.
  const startTime = Number(fields[19])
  if (!Number.isInteger(pid) || !Number.isFinite(startTime)) return undefined
  return { pid, state: fields[0]!, ppid: Number(fields[1]), pgid: Number(fields[2]), startTime }
}

export const readStat = (pid: number): ProcessStat | undefined => {
  try {
    return parseStat(readFileSync(`/proc/${pid}/stat`, "utf8"))
  } catch {
    return undefined
  }
}

const parsePids = (text: string, into: Array<number>) => {
  for (const word of text.split(" ")) {
    if (word.length > 0) into.push(Number(word))
  }
}

/** The children of `pid`, from every thread's `children` file; empty when the process is gone. */
export const childrenFromTasks = (pid: number): Array<number> => {
  const children: Array<number> = []
  let tasks: Array<string>
  try {
    tasks = readdirSync(`/proc/${pid}/task`)
  } catch {
    return children
  }
  for (const tid of tasks) {
    try {
      parsePids(readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8"), children)
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return children
}

/** Every process's parent, from one pass over `/proc`: the fallback when `children` files do not exist. */
export const scanParents = (): Map<number, Array<number>> => {
  const byParent = new Map<number, Array<number>>()
  let entries: Array<string>
  try {
    entries = readdirSync("/proc")
  } catch {
    return byParent
  }
  for (const entry of entries) {
    const first = entry.charCodeAt(0)
    if (first < 48 || first > 57) continue
    const stat = readStat(Number(entry))
    if (stat === undefined) continue
    const siblings = byParent.get(stat.ppid)
    if (siblings === undefined) byParent.set(stat.ppid, [stat.pid])
    else siblings.push(stat.pid)
  }
  return byParent
}

const childrenFilesExist: boolean = supported && existsSync(`/proc/${process.pid}/task/${process.pid}/children`)

/** How children are listed during one walk. */
export type ChildLister = () => (pid: number) => ReadonlyArray<number>

export const taskChildLister: ChildLister = () => childrenFromTasks
export const scanChildLister: ChildLister = () => {
  const byParent = scanParents()
  return (pid) => byParent.get(pid) ?? []
}

export interface Tracker {
  /** False without /proc or for a pid that is not a spawned process: then nothing is ever recorded. */
  readonly enabled: boolean
  /**
   * Walks down from the root (only while `rootRunning`: once the root is
   * reaped its pid may name another process) and from every recorded
   * descendant that is still the same process; records the new ones and
   * forgets those that are gone.
   */
  readonly sample: (rootRunning: boolean) => void
  /** The recorded descendants still running (zombies excluded). */
  readonly alive: () => ReadonlyArray<number>
  /**
   * Sends `signal` to every recorded descendant that is still the same
   * running process and has not had this signal yet, except members of
   * `exceptGroup` (a group that gets the signal anyway); returns how many
   * were signalled.
   */
  readonly signal: (signal: NodeJS.Signals, exceptGroup?: number) => number
}

interface Recorded {
  readonly pid: number
  readonly startTime: number
  sent: NodeJS.Signals | undefined
}

const sameProcess = (recorded: Recorded): ProcessStat | undefined => {
  const stat = readStat(recorded.pid)
  return stat !== undefined && stat.startTime === recorded.startTime ? stat : undefined
}

const isRunning = (stat: ProcessStat) => stat.state !== "Z" && stat.state !== "X"

/** Records the descendants of `rootPid`. Without `/proc`, or for a pid that is not a real process, it records nothing. */
export const makeTracker = (
  rootPid: number,
  options: { readonly listChildren?: ChildLister | undefined } = {}
): Tracker => {
  const recorded = new Map<number, Recorded>()
  const enabled = supported && Number.isInteger(rootPid) && rootPid > 1
  const lister = options.listChildren ?? (childrenFilesExist ? taskChildLister : scanChildLister)

  const sample = (rootRunning: boolean) => {
    if (!enabled || (!rootRunning && recorded.size === 0)) return
    const children = lister()
    const pending: Array<number> = []
    if (rootRunning) pending.push(rootPid)
    for (const entry of recorded.values()) {
      if (sameProcess(entry) === undefined) recorded.delete(entry.pid)
      else pending.push(entry.pid)
    }
    const visited = new Set<number>(pending)
    while (pending.length > 0) {
      for (const child of children(pending.pop()!)) {
        if (visited.has(child) || child <= 1 || child === process.pid || child === rootPid) continue
        visited.add(child)
        if (!recorded.has(child)) {
          const stat = readStat(child)
          if (stat === undefined) continue
          recorded.set(child, { pid: child, startTime: stat.startTime, sent: undefined })
        }
        pending.push(child)
      }
    }
  }

  const alive = () => {
    const pids: Array<number> = []
    for (const entry of recorded.values()) {
      const stat = sameProcess(entry)
      if (stat !== undefined && isRunning(stat)) pids.push(entry.pid)
    }
    return pids
  }

  const signal = (signal: NodeJS.Signals, exceptGroup?: number) => {
    let signalled = 0
    for (const entry of recorded.values()) {
      const stat = sameProcess(entry)
      if (stat === undefined) {
        recorded.delete(entry.pid)
        continue
      }
      if (!isRunning(stat) || entry.sent === signal || stat.pgid === exceptGroup) continue
      entry.sent = signal
      try {
        process.kill(entry.pid, signal)
        signalled++
      } catch {
        // Gone since the check, or not ours to signal (EPERM after a setuid exec).
      }
    }
    return signalled
  }

  return { enabled, sample, alive, signal }
}
