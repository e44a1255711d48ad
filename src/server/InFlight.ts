/**
 * The requests an instance is serving right now, where the fleet can see
 * them: for each, its session, its JSON-RPC id, and the SSE stream its
 * answer goes to. When an instance dies, another one finds what it was
 * serving and answers each of those requests with an error on its stream
 * (in the shared event log), so a client that resumes the stream anywhere
 * learns that its request will never be answered, instead of waiting
 * forever.
 *
 * Without the service (or with `layerMemory`) nothing is recorded: a
 * request dies with the process that served it, as it always has.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as JsonRpc from "../JsonRpc.ts"
import type { LeaseLost } from "./InstanceLease.ts"

/**
 * One running request.
 *
 * @since 0.1.0
 * @category models
 */
export interface Entry {
  /** The HTTP session it belongs to (`Mcp-Session-Id`). */
  readonly session: string
  readonly requestId: JsonRpc.RequestId
  /** The SSE stream (event-log stream id) its answer goes to. */
  readonly streamId: string
}

/**
 * The registry.
 *
 * @since 0.1.0
 * @category models
 */
export interface InFlightShape {
  /**
   * Runs `work` with `entries` recorded as running on this instance, and
   * removes them when it ends, however it ends. Refused (`LeaseLost`) when
   * the instance does not hold its lease, and failed the same way when the
   * lease is lost meanwhile (the work is interrupted then).
   */
  readonly run: <A, E, R>(
    entries: ReadonlyArray<Entry>,
    work: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | LeaseLost, R>
  /**
   * `run` for work that may never need `entries` recorded: `work` is given
   * `record`, which records them (once: a later call waits for the first)
   * and fails with `LeaseLost` when refused; once the work is over it does
   * nothing. What was recorded is removed when the work ends, however it
   * ends. The lease is held and watched as by `run`.
   *
   * The HTTP server transport records a handshake-era POST answered with
   * JSON only when its response stream opens (its handler sent the client
   * something on the way): a reply that never reaches the event log is
   * nothing a surviving instance could answer in its place, and recording
   * it up front cost every request two writes to the store. Without this,
   * the transport records up front with `run`.
   */
  readonly runRecordingLater?: <A, E, R>(
    entries: ReadonlyArray<Entry>,
    work: (record: Effect.Effect<void, LeaseLost>) => Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | LeaseLost, R>
}

/**
 * The registry as a service; the HTTP server transport records the
 * requests of handshake-era sessions in it when present.
 *
 * @since 0.1.0
 * @category services
 */
export class InFlight extends Context.Service<InFlight, InFlightShape>()("effect-mcp-transport/InFlight") {}

/**
 * The message of the error a request gets when the instance serving it stopped.
 *
 * @since 0.1.0
 * @category constants
 */
export const stoppedMessage = "The server instance serving this request stopped; the request may be sent again"

/**
 * The answer to a request whose instance stopped: -32603, with a reason a
 * client can act on (and nothing about the fleet's insides).
 *
 * @since 0.1.0
 * @category constructors
 */
export const stoppedResponse = (id: JsonRpc.RequestId): JsonRpc.JsonRpcResponse => ({
  jsonrpc: "2.0",
  id,
  error: { code: JsonRpc.ErrorCode.InternalError, message: stoppedMessage, data: { reason: "instance-stopped" } }
})

/**
 * Records nothing: the single-process behaviour.
 *
 * @since 0.1.0
 * @category constructors
 */
export const memory: InFlightShape = { run: (_entries, work) => work }

/**
 * `memory` as the `InFlight` service.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory: Layer.Layer<InFlight> = Layer.succeed(InFlight)(memory)
