/**
 * The options of a server definition (`McpServer.make`), declared once for
 * the public module, which exports them, and for the handler that reads
 * them.
 */
import type * as Duration from "effect/Duration"
import type { Implementation } from "../../Implementation.ts"

/**
 * What a server says about itself at `initialize`, how strictly it holds to the lifecycle, and
 * how long its requests to the client may take.
 *
 * @since 0.1.0
 * @category models
 */
export interface McpServerOptions {
  readonly serverInfo: Implementation
  /** Sent in the `initialize` result (a hint for the model). */
  readonly instructions?: string | undefined
  /**
   * Merged over the capabilities implied by the registered methods (tools,
   * resources, resources.subscribe, prompts, completions; logging always),
   * e.g. `{ tools: { listChanged: true } }`.
   */
  readonly capabilities?: Readonly<Record<string, unknown>> | undefined
  /**
   * Reject requests other than `ping` and `initialize` until the client sent
   * `notifications/initialized` (default true). Sessionless HTTP POSTs
   * (`HandlerContext.ephemeral`) are never held to it: no record of their
   * client is kept.
   */
  readonly enforceInitialized?: boolean | undefined
  /**
   * How long a request that arrives after the `initialize` reply but before
   * `notifications/initialized` waits for it before it is rejected. Default:
   * 1 s on transports with session ids (HTTP, where the notification and the
   * request travel in separate POSTs that may be served in either order), 0
   * on transports without (stdio, in-memory: their dispatch lane hands a
   * request to the handler only after the notifications sent before it were
   * handled, so an early request there is the client's mistake). When set,
   * it applies on every transport.
   */
  readonly initializedGracePeriod?: Duration.Input | undefined
  /** The error code of that rejection (default -32002, the code most MCP clients expect for a request before initialization). */
  readonly notInitializedCode?: number | undefined
  /** Timeout of requests the server sends the client (sampling, elicitation, roots), default 60 s. */
  readonly clientRequestTimeout?: Duration.Input | undefined
  /**
   * The cache hints of the `server/discover` result (stateless era): how
   * long a client may reuse it (`ttlMs`, default 60 000) and who may share
   * a cached copy (`cacheScope`, default `"private"`: the runtime cannot
   * tell whether the instructions depend on who asks).
   */
  readonly discovery?: {
    readonly ttlMs?: number | undefined
    readonly cacheScope?: "public" | "private" | undefined
  } | undefined
  /**
   * The cache hints of list results and `resources/read` in the stateless
   * era, where the revision requires them, unless the handler's result has
   * its own: `ttlMs` (default 0: stale at once, so clients ask again) and
   * `cacheScope` (default `"private"`).
   */
  readonly resultCache?: {
    readonly ttlMs?: number | undefined
    readonly cacheScope?: "public" | "private" | undefined
  } | undefined
  /**
   * Also serve the stateless era (2026-07-28) next to the handshake: a
   * request whose `_meta` names a stateless revision is served on its own
   * (`server/discover`, `subscriptions/listen`, per-request capabilities).
   * A handler's asks of the client (elicitation, sampling, roots) become
   * `input_required` results there, and the client's retry runs the handler
   * again with the answers (see `requestStateKey`). `true` serves both eras
   * over stdio, in memory and over Streamable HTTP. Default `true`: a client
   * that speaks both eras gets the stateless one; `false` serves the
   * handshake only (a stateless request is then refused as an unsupported
   * revision, and the client falls back to `initialize`).
   */
  readonly stateless?: boolean | undefined
  /**
   * The HMAC-SHA256 key that signs the `requestState` of `input_required`
   * results (stateless era), so a client can neither forge one nor move one
   * to another request: at least 32 bytes (a string counts its UTF-8
   * bytes), else `make` throws a `DefinitionError`. Default: the
   * `RequestStateKey` reference's (a random key made once per process), so
   * several server processes behind one endpoint need a shared key here or
   * there. To rotate keys, use `requestStateKeys` instead.
   */
  readonly requestStateKey?: string | Uint8Array | undefined
  /**
   * Signing keys for rotation, current first: the first signs every state
   * issued, any of them is accepted on a state brought back, so states
   * issued before a rotation still work until they expire. Each at least 32
   * bytes; not together with `requestStateKey`.
   */
  readonly requestStateKeys?: ReadonlyArray<string | Uint8Array> | undefined
  /** How long a `requestState` may be brought back, default 10 minutes. */
  readonly requestStateTtl?: Duration.Input | undefined
  /**
   * The largest `requestState` the server issues or accepts (it carries the
   * client's answers of every round so far), default 256 KiB.
   */
  readonly requestStateMaxBytes?: number | undefined
  /**
   * Tasks (the `io.modelcontextprotocol/tasks` extension): served, and
   * declared under `capabilities.extensions`, when a tool has a
   * `taskSupport` other than `"forbidden"` or when this is given. `ttl`:
   * how long a task lives from its creation (its handler is interrupted and
   * its record forgotten then; `null` for no limit), default 10 minutes;
   * `pollInterval`: the polling interval suggested to clients, default 1 s.
   * The tasks are kept in the `TaskStore` service when the handle is built
   * with one, else in memory.
   */
  readonly tasks?: {
    readonly ttl?: Duration.Input | null | undefined
    readonly pollInterval?: Duration.Input | undefined
  } | undefined
}
