/**
 * Loads McpClientSchemas (and with it `effect/Schema` and
 * `effect/ai/McpSchema`, ~95 ms of import) on first use instead of at module
 * load, once per process, for every part of the client that decodes.
 */
import * as Effect from "effect/Effect"
import type * as ClientSchemas from "./McpClientSchemas.ts"

let loading: Promise<typeof ClientSchemas> | undefined

const start = (): Promise<typeof ClientSchemas> => loading ??= import("./McpClientSchemas.ts")

/** The client's Schemas, importing them the first time. */
export const load = (): Effect.Effect<typeof ClientSchemas> => Effect.promise(start)

/**
 * Starts the import without waiting for it: called once the first request
 * of a connection is on its way, so the import runs while the server starts
 * and answers, whichever exchange (the era probe or `initialize`) that is.
 */
export const preload: Effect.Effect<void> = Effect.sync(() => void start())

/** Whether the import has been started in this process. */
export const started = (): boolean => loading !== undefined
