/**
 * Typed per-session state for `McpServer` handlers: a `SessionState`
 * describes one slot (its name and how its first value is made), and a
 * handler reads it through its context, `context.sessionState(slot)`, which gives
 * a `Ref` of the value for the session the request came on. The value is
 * made on first use in a session; when the transport ends the session
 * (HTTP DELETE, idle expiry, eviction, shutdown, the end of stdin, the
 * in-memory pair closing), the finalizers its `initial` effect registered run.
 *
 * With no session behind a request (a request of the stateless era,
 * 2026-07-28, or a sessionless HTTP POST) the slot lives for that request
 * only: made fresh, finalized when the request ends.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type { LazyArg } from "effect/Function"
import type * as Scope from "effect/Scope"

/**
 * One slot of per-session state holding an `A`. Its `initial` effect runs
 * once per session, on first use, with the session's `Scope`: resources it
 * acquires there are released when the session ends.
 *
 * @since 0.1.0
 * @category models
 */
export interface SessionState<A, E = never, R = never> {
  /** Names the slot in diagnostics; slots are told apart by identity, not by name. */
  readonly name: string
  /** Makes the slot's first value in a session; a failure is the using request's, and the next use tries again. */
  readonly initial: Effect.Effect<A, E, R | Scope.Scope>
  /**
   * Runs at the end of the session with the slot's last value (what the
   * handlers set last, which `initial`'s own finalizers cannot see), before
   * those finalizers. Optional.
   */
  readonly release?: ((value: A) => Effect.Effect<void>) | undefined
}

/**
 * The options of `make`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options<A> {
  /** Runs at the end of the session with the slot's last value. Default: nothing. */
  readonly release?: ((value: A) => Effect.Effect<void>) | undefined
}

/**
 * A slot of per-session state. `initial` is a value maker (`() => "/"`) or
 * an effect that may acquire resources in the session's `Scope`
 * (`Effect.acquireRelease`), released when the session ends; `release`
 * sees the slot's last value then.
 *
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import * as Ref from "effect/Ref"
 * import * as Schema from "effect/Schema"
 * import * as McpServer from "effect-mcp-transport/server/McpServer"
 * import * as SessionState from "effect-mcp-transport/server/SessionState"
 *
 * // Each session has its own working directory, "/" until it changes it.
 * const cwd = SessionState.make("cwd", () => "/")
 *
 * const server = McpServer.make({ serverInfo: { name: "shell", version: "1.0.0" } }).pipe(
 *   McpServer.method("shell/cd", { params: Schema.Struct({ path: Schema.String }) }, ({ path }, ctx) =>
 *     Effect.flatMap(ctx.sessionState(cwd), (ref) => Effect.as(Ref.set(ref, path), {}))),
 *   McpServer.method("shell/pwd", {}, (_, ctx) =>
 *     Effect.map(Effect.flatMap(ctx.sessionState(cwd), Ref.get), (dir) => ({ cwd: dir })))
 * )
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export function make<A, E = never, R = never>(
  name: string,
  initial: Effect.Effect<A, E, R>,
  options?: Options<A>
): SessionState<A, E, Exclude<R, Scope.Scope>>
export function make<A>(name: string, initial: LazyArg<A>, options?: Options<A>): SessionState<A>
export function make(
  name: string,
  initial: Effect.Effect<unknown, unknown, unknown> | LazyArg<unknown>,
  options?: Options<any>
): SessionState<unknown, unknown, unknown> {
  return { name, initial: Effect.isEffect(initial) ? initial : Effect.sync(initial), release: options?.release }
}
