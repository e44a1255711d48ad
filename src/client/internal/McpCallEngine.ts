/**
 * How `McpClient` sends a request and waits for its result: progress tokens,
 * the per-call options (idle timeout restarted by progress, total cap,
 * `onProgress`), routing each progress notification to its call, and the
 * shapes built on one call (a stream of progress then result, pagination).
 * Capability checks and result decoders are the caller's: this module
 * never loads a Schema.
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import {
  type CapabilityNotSupported,
  type HeaderMismatch,
  InvalidPayload,
  type MissingClientCapability,
  type RequestError,
  RequestTimeout,
  type TooManyInputRounds,
  type UnsupportedProtocolVersion
} from "../../McpError.ts"
import type { ClientTransportShape, RequestOptions } from "../ClientTransport.ts"
import * as SlotTable from "../../internal/SlotTable.ts"
import { type ProgressRelay, withProgress } from "./ProgressRelay.ts"
import type { Progress } from "./ServerNotificationEnum.ts"

/**
 * What a call fails with inside the client, before `McpClient` puts it in its
 * group (`McpErrorGroup.group`).
 */
export type FlatError =
  | RequestError
  | CapabilityNotSupported
  | InvalidPayload
  | HeaderMismatch
  | MissingClientCapability
  | UnsupportedProtocolVersion
  | TooManyInputRounds

/**
 * Options of one call.
 *
 * @since 0.1.0
 * @category models
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import type { CallOptions } from "effect-mcp-transport/client/McpClient"
 *
 * // Up to 10 s of silence between progress steps, never more than 5 minutes in all.
 * const slowTool: CallOptions = {
 *   timeout: "10 seconds",
 *   maxTotalTimeout: "5 minutes",
 *   onProgress: (p) => Effect.log(`${p.progress}/${p.total ?? "?"}`)
 * }
 * ```
 */
export interface CallOptions {
  /** Idle timeout (default: the client's `requestTimeout`). `Duration.infinity` disables it. */
  readonly timeout?: Duration.Input | undefined
  /** Whether a progress notification restarts the idle timeout (default true). */
  readonly resetTimeoutOnProgress?: boolean | undefined
  /** Caps the whole call, progress or not (default: no cap). */
  readonly maxTotalTimeout?: Duration.Input | undefined
  /** Sees each progress notification of this call whose progress increased. */
  readonly onProgress?: ((progress: Progress) => Effect.Effect<void>) | undefined
}

/**
 * What a streamed call emits: its progress, then its result.
 *
 * @since 0.1.0
 * @category models
 */
export type CallEvent<A> =
  | { readonly _tag: "Progress"; readonly progress: Progress }
  | { readonly _tag: "Result"; readonly result: A }

/**
 * Which page of a paginated list to fetch (none: the first).
 *
 * @since 0.1.0
 * @category models
 */
export interface PageParams {
  readonly cursor?: string | undefined
}

type Meta = Readonly<Record<string, unknown>>

/** Turns a call's raw result into its typed value, or fails. */
export type Decode<A> = (raw: unknown) => Effect.Effect<A, FlatError>

/** What a call passes to the transport besides its body: routing headers, and who wants its id. */
export type WireOptions = Pick<RequestOptions, "headers" | "onId">

/** The calls of one client, and the progress routing that serves them. */
export interface CallEngine {
  /**
   * One call, its result decoded by `decode`; `mapError` (if any) turns what
   * the request failed with into the caller's error (not what `decode` fails with);
   * `metaOf` (if any) gives `_meta` fields to send besides the params' own,
   * read each time the call runs.
   */
  readonly send: <A>(
    method: string,
    params: Readonly<Record<string, unknown>> | undefined,
    callOptions: CallOptions | undefined,
    decode: Decode<A>,
    wire?: WireOptions,
    mapError?: (error: FlatError) => FlatError,
    metaOf?: () => Meta
  ) => Effect.Effect<A, FlatError>
  /** Hands a progress notification to the call it belongs to, if that call is still in flight. */
  readonly routeProgress: (progress: Progress) => void
}

/** One call's view of its progress notifications (see `watches`). */
interface Watch {
  /** The highest progress seen so far (none yet: `undefined`); progress not above it says nothing new. */
  last: number | undefined
  /** Restarts the call's idle timeout; set by the transport once the timeout runs. */
  restart: (() => void) | undefined
  /** Hands a new progress to `onProgress`, for a call that has one (see `withProgress`). */
  relay: ProgressRelay | undefined
  /** The request body until the transport takes it: not kept while the call waits. */
  body: Readonly<Record<string, unknown>> | undefined
}

const millis = (d: Duration.Duration): number => (Duration.isFinite(d) ? Duration.toMillis(d) : Number.POSITIVE_INFINITY)

/**
 * Here the transport's own timeout (it has no phase) is the idle timeout: the
 * transport was given the call's method and idle timeout, so its error names
 * both. One function for every call, so a waiting call holds no closure for it.
 */
const asIdleTimeout = (e: FlatError): FlatError =>
  e._tag === "RequestTimeout" && e.phase === undefined
    ? new RequestTimeout({ method: e.method, id: e.id, timeoutMs: e.timeoutMs, phase: "No response or progress" })
    : e

const failAsIdleTimeout = (cause: Cause.Cause<FlatError>): Effect.Effect<never, FlatError> =>
  Effect.failCause(Cause.map(cause, asIdleTimeout))

/** What a request's failure becomes: the idle timeout named as such (when progress restarts it), then `mapError`. */
const failureOf = (
  restartOnProgress: boolean,
  mapError: ((error: FlatError) => FlatError) | undefined
): (cause: Cause.Cause<FlatError>) => Effect.Effect<never, FlatError> =>
  mapError === undefined
    ? restartOnProgress ? failAsIdleTimeout : Effect.failCause
    : restartOnProgress
    ? (cause) => Effect.failCause(Cause.map(cause, (e) => mapError(asIdleTimeout(e))))
    : (cause) => Effect.failCause(Cause.map(cause, mapError))

/** The result of `request()`: not decoded. */
export const undecoded = (raw: unknown): Effect.Effect<unknown> => Exit.succeed(raw)

/**
 * The call engine of one client over `transport`; `requestTimeout` is the
 * idle timeout of calls that set none. `senderFor` picks, by the fiber of a
 * call, the transport it goes through (default `transport`; see
 * `ClientSpans.senderFor`): the engine looks at the fiber anyway.
 */
export const make = (
  transport: ClientTransportShape,
  requestTimeout: Duration.Duration,
  senderFor: (fiber: Fiber.Fiber<unknown, unknown>) => ClientTransportShape = () => transport
): CallEngine => {
  /**
   * The calls in flight by progress token. Tokens are integers (the spec
   * allows them): neither making one nor finding it again for each progress
   * costs a string, and consecutive ones take consecutive slots (SlotTable).
   */
  const watches = SlotTable.make<number, Watch>()
  let tokenCounter = 0
  const requestTimeoutMs = millis(requestTimeout)

  const watchOf = (token: string | number): Watch | undefined => {
    if (typeof token === "number") return watches.get(token)
    // A peer that echoes our integer as a string still reaches the call.
    const n = Number(token)
    return Number.isSafeInteger(n) && String(n) === token ? watches.get(n) : undefined
  }

  const routeProgress = (n: Progress): void => {
    const watch = watchOf(n.progressToken)
    // Out-of-order or repeated progress says nothing new: ignore it.
    if (watch !== undefined && n.progress > (watch.last ?? Number.NEGATIVE_INFINITY)) {
      watch.last = n.progress
      watch.restart?.()
      watch.relay?.deliver(n)
    }
  }

  /**
   * The common case (no `onProgress`, no `maxTotalTimeout`) adds no fiber,
   * queue or timer to the transport's request: the idle timeout IS the
   * transport's timeout, and each new progress of this call restarts it
   * through `onDeadline`. It also keeps the per-call work to two frames
   * around the request (see `plain`), which is what most of this layer's cost
   * per call was. Only an `onProgress` callback needs a fiber of its own, to
   * run the callbacks one after the other while the call waits.
   */
  const send = <A>(
    method: string,
    params: Readonly<Record<string, unknown>> | undefined,
    callOptions: CallOptions | undefined,
    decode: Decode<A>,
    wire?: WireOptions,
    mapError?: (error: FlatError) => FlatError,
    metaOf?: () => Meta
  ): Effect.Effect<A, FlatError> =>
    Effect.withFiber((fiber) => {
      const sender = senderFor(fiber)
      const token = ++tokenCounter
      const timeout = callOptions?.timeout
      const idle = timeout === undefined ? requestTimeout : Duration.fromInputUnsafe(timeout)
      const idleMs = timeout === undefined ? requestTimeoutMs : millis(idle)
      const restartOnProgress = (callOptions?.resetTimeoutOnProgress ?? true) && Number.isFinite(idleMs)
      const meta = metaOf === undefined
        ? { ...(params?._meta as Meta | undefined), progressToken: token }
        : { ...(params?._meta as Meta | undefined), ...metaOf(), progressToken: token }
      const body = { ...params, _meta: meta }
      const onProgress = callOptions?.onProgress
      if (onProgress === undefined && callOptions?.maxTotalTimeout === undefined) {
        return plain(sender, method, token, body, idle, restartOnProgress, decode, wire, mapError)
      }
      return Effect.flatMap(
        watched(fiber, sender, method, token, body, idle, restartOnProgress, onProgress, callOptions, wire, mapError),
        decode
      )
    })

  /**
   * The common call: the request under one frame that decodes its result
   * (or names its timeout) and one that drops its watch. The body is handed
   * over through the watch, so that the frames keep neither it nor the
   * transport's request effect while the call waits.
   */
  const plain = <A>(
    sender: ClientTransportShape,
    method: string,
    token: number,
    body: Readonly<Record<string, unknown>>,
    idle: Duration.Duration,
    restartOnProgress: boolean,
    decode: Decode<A>,
    wire: WireOptions | undefined,
    mapError: ((error: FlatError) => FlatError) | undefined
  ): Effect.Effect<A, FlatError> => {
    const watch: Watch = { last: undefined, restart: undefined, relay: undefined, body }
    watches.set(token, watch)
    // One function is both the request's thunk (called without an exit) and
    // the finalizer that drops the watch (called with the call's exit): a
    // waiting call holds one closure here instead of two, which is a tenth
    // of what this layer adds to a request in flight.
    const step = (exit?: Exit.Exit<unknown, unknown>): Effect.Effect<unknown, FlatError> => {
      if (exit !== undefined) {
        watches.delete(token)
        return Effect.void
      }
      const taken = watch.body
      watch.body = undefined
      const options: RequestOptions = restartOnProgress
        ? { ...wire, timeout: idle, onDeadline: (restart) => void (watch.restart = restart) }
        : { ...wire, timeout: idle }
      return sender.request(method, taken, options)
    }
    const request = Effect.onExit(Effect.suspend(step), step)
    return Effect.matchCauseEffect(request, { onSuccess: decode, onFailure: failureOf(restartOnProgress, mapError) })
  }

  /** A call with `onProgress` or `maxTotalTimeout`: progress may go to `onProgress`, and a total timeout may race it. */
  const watched = (
    caller: Fiber.Fiber<unknown, unknown>,
    sender: ClientTransportShape,
    method: string,
    token: number,
    body: Readonly<Record<string, unknown>>,
    idle: Duration.Duration,
    restartOnProgress: boolean,
    onProgress: ((p: Progress) => Effect.Effect<void>) | undefined,
    callOptions: CallOptions | undefined,
    wire: WireOptions | undefined,
    mapError: ((error: FlatError) => FlatError) | undefined
  ): Effect.Effect<unknown, FlatError> => {
    const watch: Watch = { last: undefined, restart: undefined, relay: undefined, body: undefined }
    watches.set(token, watch)
    const request: Effect.Effect<unknown, FlatError> = restartOnProgress
      ? sender.request(method, body, { ...wire, timeout: idle, onDeadline: (r) => void (watch.restart = r) })
      : sender.request(method, body, { ...wire, timeout: idle })
    const failure = restartOnProgress || mapError !== undefined ? failureOf(restartOnProgress, mapError) : undefined
    const maxTotal = callOptions?.maxTotalTimeout
    if (maxTotal === undefined) {
      // `send` comes here for an `onProgress` or a total timeout: without the one, the other.
      return withProgress(caller, request, failure, watch, onProgress!, () => void watches.delete(token))
    }
    // Under a total timeout the callbacks' fiber takes the services of the fiber the timeout runs the call in.
    const relayed: Effect.Effect<unknown, FlatError> = onProgress !== undefined
      ? Effect.withFiber((inner) => withProgress(inner, request, failure, watch, onProgress, undefined))
      : failure === undefined
      ? request
      : Effect.catchCause(request, failure)
    const max = Duration.fromInputUnsafe(maxTotal)
    const effect = Effect.timeoutOrElse(relayed, {
      duration: max,
      orElse: () =>
        Effect.fail(new RequestTimeout({ method, id: token, timeoutMs: millis(max), phase: "Maximum total time exceeded" }))
    })
    return Effect.ensuring(effect, Effect.sync(() => watches.delete(token)))
  }

  return { send, routeProgress }
}

/** A call as a stream: each progress (also passed to the caller's own `onProgress`), then the result. */
export const streamed = <A, E = FlatError>(
  run: (options: CallOptions) => Effect.Effect<A, E>,
  callOptions: CallOptions | undefined
): Stream.Stream<CallEvent<A>, E> =>
  Stream.callback<CallEvent<A>, E>((queue) =>
    run({
      ...callOptions,
      onProgress: (progress) =>
        Effect.andThen(
          callOptions?.onProgress?.(progress) ?? Effect.void,
          Queue.offer(queue, { _tag: "Progress", progress })
        ).pipe(Effect.asVoid)
    }).pipe(
      Effect.flatMap((result) => Queue.offer(queue, { _tag: "Result", result })),
      Effect.andThen(Queue.end(queue))
    )
  )

/**
 * A paginated list method from its one-page call: one page, every item page
 * after page (failing with `InvalidPayload` when a cursor repeats, instead of
 * looping), and every item collected.
 */
export const paginated = <P, A>(
  method: string,
  page: (params: Readonly<Record<string, unknown>> | undefined, callOptions?: CallOptions) => Effect.Effect<P, FlatError>,
  items: (page: P) => ReadonlyArray<A>,
  nextCursor: (page: P) => string | undefined
) => {
  const list = (params?: PageParams, callOptions?: CallOptions) =>
    page(params?.cursor === undefined ? undefined : { cursor: params.cursor }, callOptions)
  const all = (callOptions?: CallOptions): Stream.Stream<A, FlatError> =>
    Stream.paginate({ cursor: undefined as string | undefined, seen: new Set<string>() }, (state) =>
      Effect.flatMap(list({ cursor: state.cursor }, callOptions), (result) => {
        const next = nextCursor(result)
        if (next === undefined) return Effect.succeed([items(result), Option.none()] as const)
        if (state.seen.has(next)) {
          return Effect.fail(
            new InvalidPayload({ method, kind: "result", reason: `nextCursor ${JSON.stringify(next)} repeats` })
          )
        }
        state.seen.add(next)
        return Effect.succeed([items(result), Option.some({ cursor: next, seen: state.seen })] as const)
      }))
  const collect = (callOptions?: CallOptions) => Stream.runCollect(all(callOptions))
  return { list, all, collect } as const
}
