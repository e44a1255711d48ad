/**
 * Loads McpClientSchemas (and with it `effect/Schema` and
 * `effect/ai/McpSchema`, ~95 ms of import) on first use instead of at module
 * load, once per process, for every part of the client that decodes.
 */
import * as Effect from "effect/Effect"
import type * as ClientSchemas from "./McpClientSchemas.ts"

let loading: Promise<typeof ClientSchemas> | undefined

/** The client's Schemas, importing them the first time. */
export const load = (): Effect.Effect<typeof ClientSchemas> => {
  const schemas = loading ??= import("./McpClientSchemas.ts")
  return Effect.promise(() => schemas)
}
