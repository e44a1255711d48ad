/**
 * The keys that sign `requestState` (stateless era) when a server's options
 * name none (`McpServerOptions.requestStateKey` / `requestStateKeys` win over
 * it). By default a random key made once per process: states survive a new
 * handle in the same process, not a restart, and not a move to another
 * instance. Provide the same keys to every instance of a fleet behind one
 * endpoint (and to tests that need two servers to accept each other's
 * states) instead of repeating the option in every server definition.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import * as McpServer from "effect-mcp-transport/server/McpServer"
 * import * as RequestStateKey from "effect-mcp-transport/server/RequestStateKey"
 *
 * const server = McpServer.make({ serverInfo: { name: "fleet", version: "1.0.0" } })
 * const handle = McpServer.toHandler(server).pipe(
 *   Effect.provide(RequestStateKey.layer("a shared secret of at least 32 bytes"))
 * )
 * ```
 *
 * @since 0.1.0
 */
import { randomBytes } from "node:crypto"
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import * as RequestStateKeys from "./internal/RequestStateKeys.ts"

/**
 * The signing keys a server uses when its options name none, current first:
 * the first signs every state issued, any of them checks a state brought
 * back. Default: one random key per process.
 *
 * @since 0.1.0
 * @category references
 */
export class RequestStateKey extends Context.Reference<ReadonlyArray<Uint8Array>>(
  "effect-mcp-transport/server/RequestStateKey",
  { defaultValue: () => [new Uint8Array(randomBytes(32))] }
) {}

/**
 * Checked keys for `RequestStateKey`: one key, or a list for rotation
 * (current first). Throws a `DefinitionError` for a key shorter than 32
 * bytes (a string counts its UTF-8 bytes) or an empty list, as
 * `McpServer.make` does for the options.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (keys: string | Uint8Array | ReadonlyArray<string | Uint8Array>): ReadonlyArray<Uint8Array> =>
  RequestStateKeys.resolve(isList(keys) ? { requestStateKeys: keys } : { requestStateKey: keys })!

/**
 * Provides `RequestStateKey` with checked keys (see `make`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (keys: string | Uint8Array | ReadonlyArray<string | Uint8Array>): Layer.Layer<never> =>
  Layer.succeed(RequestStateKey, make(keys))

const isList = (keys: string | Uint8Array | ReadonlyArray<string | Uint8Array>): keys is ReadonlyArray<string | Uint8Array> =>
  Array.isArray(keys)
