/**
 * The last successful tool listing of each server, kept on disk so that a
 * server slow to start can still offer its tools (marked cached) while it
 * connects. A cache is an optimisation: reading or writing it never fails the
 * caller; trouble is logged and the cache is treated as empty.
 *
 * File format: `{ "version": 1, "servers": { "<name>": { "savedAt": "<ISO date>", "tools": [ <Tool JSON> ] } } }`,
 * written to a temporary file and renamed, so a crash never leaves half a file.
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import * as Semaphore from "effect/Semaphore"
import * as McpSchema from "effect/ai/McpSchema"

export interface CachedTools {
  readonly tools: ReadonlyArray<McpSchema.Tool>
  readonly savedAt: Date
}

export interface ToolCache {
  readonly load: (server: string) => Effect.Effect<Option.Option<CachedTools>>
  readonly save: (server: string, tools: ReadonlyArray<McpSchema.Tool>) => Effect.Effect<void>
}

/** No cache: slow servers simply have no tools until they are ready. */
export const none: ToolCache = {
  load: () => Effect.succeed(Option.none()),
  save: () => Effect.void
}

/** In memory only (lost with the process); for tests and embedding. */
export const memory = (): ToolCache => {
  const entries = new Map<string, CachedTools>()
  return {
    load: (server) => Effect.sync(() => Option.fromUndefinedOr(entries.get(server))),
    save: (server, tools) => Effect.sync(() => void entries.set(server, { tools, savedAt: new Date() }))
  }
}

const Entry = Schema.Struct({ savedAt: Schema.String, tools: Schema.Array(McpSchema.Tool) })
const FileContent = Schema.Struct({
  version: Schema.Literal(1),
  servers: Schema.Record(Schema.String, Entry)
})
const decodeFile = Schema.decodeUnknownEffect(Schema.fromJsonString(FileContent))
const encodeFile = Schema.encodeEffect(Schema.fromJsonString(FileContent))
type FileContent = typeof FileContent.Type

/** A JSON file at `path` (its directory is created when needed). */
export const file = Effect.fnUntraced(function*(path: string): Effect.fn.Return<ToolCache, never, FileSystem.FileSystem | Path.Path> {
  const fs = yield* FileSystem.FileSystem
  const paths = yield* Path.Path
  const lock = yield* Semaphore.make(1)

  const empty: FileContent = { version: 1, servers: {} }
  const read: Effect.Effect<FileContent> = fs.readFileString(path).pipe(
    Effect.flatMap(decodeFile),
    Effect.catch((error) =>
      error._tag === "PlatformError" && error.reason._tag === "NotFound"
        ? Effect.succeed(empty)
        : Effect.as(Effect.logWarning(`tool cache ${path} is unreadable; starting afresh`, error), empty)
    )
  )

  const load = (server: string) =>
    read.pipe(
      Effect.map((content) => {
        const entry = content.servers[server]
        return entry === undefined ? Option.none() : Option.some({ tools: entry.tools, savedAt: new Date(entry.savedAt) })
      }),
      lock.withPermits(1)
    )

  const save = (server: string, tools: ReadonlyArray<McpSchema.Tool>) =>
    Effect.gen(function*() {
      const content = yield* read
      const next: FileContent = {
        version: 1,
        servers: { ...content.servers, [server]: { savedAt: new Date().toISOString(), tools } }
      }
      const text = yield* encodeFile(next)
      const tmp = `${path}.${process.pid}.tmp`
      yield* fs.makeDirectory(paths.dirname(path), { recursive: true })
      yield* fs.writeFileString(tmp, text)
      yield* fs.rename(tmp, path)
    }).pipe(
      Effect.catch((error) => Effect.logWarning(`could not write the tool cache ${path}`, error)),
      lock.withPermits(1)
    )

  return { load, save }
})
