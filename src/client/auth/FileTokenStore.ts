/**
 * A `TokenStore` in one JSON file, for tokens that outlive the process. The
 * file is its owner's only (mode 0600): a file others can read or write is
 * refused, not used, and so is one whose contents are not a token store.
 * Every write goes to a temporary file in the same directory, renamed over
 * the old one, so a crash leaves the old contents or the new, never half.
 * Every change (and every refresh, through `modify`) holds a lock file,
 * `<file>.lock`, so that processes sharing the file take turns: none writes
 * over another's change, and a refresh token is never used twice.
 */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Semaphore from "effect/Semaphore"
import { TokenStoreFailed } from "../../AuthError.ts"
import * as FileLock from "../internal/FileLock.ts"
import { type Contents, decode, empty, TokenStore, type TokenStoreShape } from "./TokenStore.ts"

const ioError = (file: string, what: string) => (cause: unknown) =>
  new TokenStoreFailed({
    path: file,
    reason: "io",
    detail: `${what} failed: ${cause instanceof Error ? cause.message : String(cause)}`
  })

const isMissing = (cause: unknown): boolean =>
  typeof cause === "object" && cause !== null && (cause as { code?: unknown }).code === "ENOENT"

/** The contents of `file`; empty when there is no file yet. */
const read = (file: string): Effect.Effect<Contents, TokenStoreFailed> =>
  Effect.gen(function*() {
    const handle = yield* Effect.tryPromise({
      try: () => fs.open(file, "r"),
      catch: (cause) => cause
    }).pipe(Effect.catch((cause) => isMissing(cause) ? Effect.succeed(undefined) : Effect.fail(ioError(file, "opening")(cause))))
    if (handle === undefined) return empty
    return yield* Effect.acquireUseRelease(
      Effect.succeed(handle),
      (h) => readOpened(file, h),
      (h) => Effect.promise(() => h.close())
    )
  })

/**
 * The contents of the file opened as `handle`. One generator function for every read: a provider reads
 * its store for each request (docs/design.md, "Per-request code and the old generation").
 */
const readOpened = Effect.fnUntraced(function*(
  file: string,
  handle: fs.FileHandle
): Effect.fn.Return<Contents, TokenStoreFailed> {
  // The mode of the file actually opened, not of whatever the path names a moment later.
  const stat = yield* Effect.tryPromise({ try: () => handle.stat(), catch: ioError(file, "stat") })
  if (process.platform !== "win32" && (stat.mode & 0o077) !== 0) {
    return yield* new TokenStoreFailed({
      path: file,
      reason: "permissions",
      detail: `the file has mode ${(stat.mode & 0o777).toString(8)}, readable or writable by others`
    })
  }
  const text = yield* Effect.tryPromise({ try: () => handle.readFile("utf8"), catch: ioError(file, "reading") })
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return yield* new TokenStoreFailed({ path: file, reason: "corrupt", detail: "the file is not JSON" })
  }
  const contents = decode(json)
  if (contents === undefined) {
    return yield* new TokenStoreFailed({
      path: file,
      reason: "corrupt",
      detail: "the file is JSON but not a token store"
    })
  }
  return contents
})

/** Writes `contents` to a 0600 temporary file beside `file`, then renames it over `file`. */
const write = (file: string, contents: Contents): Effect.Effect<void, TokenStoreFailed> => {
  const temp = path.join(
    path.dirname(file),
    `.${path.basename(file)}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`
  )
  return Effect.tryPromise({
    try: async () => {
      const handle = await fs.open(temp, "wx", 0o600)
      try {
        await handle.writeFile(JSON.stringify(contents, null, 2))
        await handle.sync()
      } finally {
        await handle.close()
      }
      await fs.rename(temp, file)
    },
    catch: ioError(file, "writing")
  }).pipe(Effect.tapError(() => Effect.promise(() => fs.rm(temp, { force: true }))))
}

/**
 * How long the store waits for the lock of another process.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * How long a change waits for another process's lock before failing with
   * `TokenStoreFailed { reason: "locked" }`. Default 90 seconds.
   */
  readonly lockTimeout?: Duration.Input | undefined
  /**
   * A lock older than this is taken to be left behind (by a process that
   * hung, or died on another host) and broken; one whose process is gone on
   * this host is broken at once. Keep it above the provider's `timeout`: a
   * refresh holds the lock for its token request. Default 60 seconds.
   */
  readonly staleLockAge?: Duration.Input | undefined
}

const DEFAULT_LOCK_TIMEOUT = Duration.seconds(90)
const DEFAULT_STALE_LOCK_AGE = Duration.seconds(60)

/**
 * A store kept in `file` (created on the first write, mode 0600). Reading a
 * file with wider permissions, or one that is not a token store, fails with
 * `TokenStoreFailed`. Changes hold the lock file `<file>.lock`, shared
 * with every other process using the same file.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (file: string, options: Options = {}): Effect.Effect<TokenStoreShape> =>
  Effect.sync(() => {
    // The lock file serializes processes; this one serializes the fibers of this store, which would otherwise poll it.
    const lock = Semaphore.makeUnsafe(1)
    const bounds: FileLock.Options = {
      timeout: options.lockTimeout ?? DEFAULT_LOCK_TIMEOUT,
      staleAfter: options.staleLockAge ?? DEFAULT_STALE_LOCK_AGE
    }
    const modify: TokenStoreShape["modify"] & {} = (f) =>
      lock.withPermit(FileLock.withLock(
        file,
        bounds,
        Effect.gen(function*() {
          const contents = yield* read(file)
          const [result, next] = yield* f(contents)
          if (next !== contents) yield* write(file, next)
          return result
        })
      ))
    return {
      load: read(file),
      update: (f) => modify((contents) => Effect.succeed([undefined, f(contents)] as const)),
      modify
    }
  })

/**
 * Provides a `TokenStore` kept in `file`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (file: string, options: Options = {}): Layer.Layer<TokenStore> =>
  Layer.effect(TokenStore, make(file, options))
