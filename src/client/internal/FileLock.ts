/**
 * An exclusive lock between processes on one file: `<file>.lock`, created
 * with O_EXCL (`wx`), so only one process at a time can create it. Its
 * contents say who holds it (pid, host, when, a random id). A lock whose
 * holder is gone (same host, no such process) or that is older than
 * `staleAfter` is broken; a waiter gives up after `timeout`. The waiting
 * polls, backing off to 50 ms: no file system notifies the removal of a file
 * reliably everywhere.
 */
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { TokenStoreFailed } from "../../AuthError.ts"

/**
 * Bounds of the lock.
 */
export interface Options {
  /** How long to wait for the lock before failing with `TokenStoreFailed { reason: "locked" }`. */
  readonly timeout: Duration.Input
  /** A lock held this long is taken to be left behind by a process that hung or died elsewhere, and broken. */
  readonly staleAfter: Duration.Input
}

interface Holder {
  readonly pid: number
  readonly host: string
  readonly at: number
  readonly id: string
}

const codeOf = (cause: unknown): unknown => typeof cause === "object" && cause !== null ? (cause as { code?: unknown }).code : undefined

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (cause) {
    // EPERM: it exists, it is another user's.
    return codeOf(cause) === "EPERM"
  }
}

const parse = (text: string): Holder | undefined => {
  try {
    const value = JSON.parse(text) as Partial<Holder>
    return typeof value.pid === "number" && typeof value.host === "string" && typeof value.at === "number" &&
        typeof value.id === "string"
      ? value as Holder
      : undefined
  } catch {
    return undefined
  }
}

/** Creates the lock file; false when another process holds it. */
const tryCreate = async (lockFile: string, text: string): Promise<boolean> => {
  let handle: fs.FileHandle
  try {
    handle = await fs.open(lockFile, "wx", 0o600)
  } catch (cause) {
    if (codeOf(cause) === "EEXIST") return false
    throw cause
  }
  try {
    await handle.writeFile(text)
  } finally {
    await handle.close()
  }
  return true
}

/** What the lock file holds now, and whether it is left behind; undefined when there is no lock file. */
const inspect = async (lockFile: string, staleMs: number): Promise<{ text: string; stale: boolean } | undefined> => {
  let text: string
  let mtime: number
  try {
    text = await fs.readFile(lockFile, "utf8")
    mtime = (await fs.stat(lockFile)).mtimeMs
  } catch (cause) {
    if (codeOf(cause) === "ENOENT") return undefined
    throw cause
  }
  const holder = parse(text)
  // Unreadable contents: a holder between creating the file and writing it, or one that died there.
  if (holder === undefined) return { text, stale: Date.now() - mtime > staleMs }
  const gone = holder.host === os.hostname() && holder.pid !== process.pid && !alive(holder.pid)
  return { text, stale: gone || Date.now() - holder.at > staleMs }
}

/**
 * Breaks a left-behind lock: renamed aside first, so that of two processes
 * breaking it at once only one removes it; a lock that turns out to be a
 * fresh one (taken between the look and the rename) is put back.
 */
const breakLock = async (lockFile: string, judged: string): Promise<void> => {
  const aside = `${lockFile}.${process.pid}.${randomBytes(6).toString("hex")}.stale`
  try {
    await fs.rename(lockFile, aside)
  } catch (cause) {
    if (codeOf(cause) === "ENOENT") return
    throw cause
  }
  try {
    if ((await fs.readFile(aside, "utf8")) !== judged) await fs.link(aside, lockFile).catch(() => undefined)
  } finally {
    await fs.rm(aside, { force: true })
  }
}

/** Removes the lock file if it is still this holder's (a lock broken as stale may be another's by now). */
const release = async (lockFile: string, text: string): Promise<void> => {
  const now = await fs.readFile(lockFile, "utf8").catch(() => undefined)
  if (now === text) await fs.rm(lockFile, { force: true })
}

/**
 * Runs `effect` holding the lock `<file>.lock`, released however it ends.
 */
export const withLock = <A, E, R>(
  file: string,
  options: Options,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E | TokenStoreFailed, R> => {
  const lockFile = `${file}.lock`
  const timeoutMs = Duration.toMillis(Duration.fromInputUnsafe(options.timeout))
  const staleMs = Duration.toMillis(Duration.fromInputUnsafe(options.staleAfter))
  const failed = (cause: unknown) =>
    new TokenStoreFailed({
      path: file,
      reason: "io",
      detail: `locking failed: ${cause instanceof Error ? cause.message : String(cause)}`
    })
  const acquire = Effect.gen(function*() {
    const id = randomBytes(12).toString("hex")
    const deadline = Date.now() + timeoutMs
    let delay = 2
    while (true) {
      const holder: Holder = { pid: process.pid, host: os.hostname(), at: Date.now(), id }
      const text = JSON.stringify(holder)
      if (yield* Effect.tryPromise({ try: () => tryCreate(lockFile, text), catch: failed })) return text
      const found = yield* Effect.tryPromise({ try: () => inspect(lockFile, staleMs), catch: failed })
      if (found?.stale === true) {
        yield* Effect.logDebug("MCP auth: breaking a token store lock left behind", { lockFile })
        yield* Effect.tryPromise({ try: () => breakLock(lockFile, found.text), catch: failed })
        continue
      }
      if (found === undefined) continue
      if (Date.now() >= deadline) {
        return yield* new TokenStoreFailed({
          path: file,
          reason: "locked",
          detail: `another process has held ${lockFile} for longer than ${Duration.format(Duration.millis(timeoutMs))}`
        })
      }
      yield* Effect.sleep(Duration.millis(delay))
      delay = Math.min(delay * 2, 50)
    }
  })
  return Effect.acquireUseRelease(
    acquire,
    () => effect,
    (text) => Effect.promise(() => release(lockFile, text).catch(() => undefined))
  )
}
