/**
 * How `McpClient` sends a call in the stateless era (2026-07-28): every
 * request carries its own `_meta` (version, capabilities, client info, log
 * level), every result's `resultType` is checked, an `input_required` result
 * is answered with the client's handlers and the request re-issued with a new
 * id (the answers and the server's `requestState` echoed untouched), the
 * new error codes become typed errors, and over HTTP the `Mcp-Param-*`
 * headers of a tool call are sent, refreshed once when the server says they
 * do not match.
 */
import * as Effect from "effect/Effect"
import * as JsonRpc from "../../JsonRpc.ts"
import {
  type HeaderMismatch,
  InvalidPayload,
  type MissingClientCapability,
  RpcError,
  TooManyInputRounds,
  type UnsupportedProtocolVersion
} from "../../McpError.ts"
import * as Negotiation from "../Negotiation.ts"
import * as RequestMeta from "../../RequestMeta.ts"
import type { RequestHandler } from "../ClientTransport.ts"
import type { CallEngine, CallOptions, Decode, FlatError } from "./McpCallEngine.ts"
import * as UnavailableRetry from "./UnavailableRetry.ts"

/**
 * What a typed method can fail with in the stateless era only.
 *
 * @since 0.1.0
 * @category errors
 */
export type ModernError = HeaderMismatch | MissingClientCapability | UnsupportedProtocolVersion | TooManyInputRounds

/** The methods a server may answer with `input_required`. */
const MULTI_ROUND = new Set(["tools/call", "resources/read", "prompts/get"])

/** The round bound unless the client says otherwise. */
export const DEFAULT_MAX_INPUT_ROUNDS = 10

type Params = Readonly<Record<string, unknown>>

export interface ModernOptions {
  readonly calls: CallEngine
  /** Answers the server's input requests (sampling, elicitation, roots): the client's handlers. */
  readonly answer: RequestHandler
  /** The `_meta` of a request without and with a log level; fixed per client, so built once. */
  readonly meta: (logLevel: string | undefined) => Params
  readonly logLevel: () => string | undefined
  readonly maxInputRounds: number
  /** The `Mcp-Param-*` headers of a tool call (HTTP only; `undefined` elsewhere or when none). */
  readonly paramHeaders: ((tool: string, args: unknown) => Readonly<Record<string, string>> | undefined) | undefined
  /** Re-reads the tool list so that the next call's parameter headers are current. */
  readonly refreshTools: Effect.Effect<void, FlatError>
}

/** An `input_required` result's requests and state, as the server sent them. */
interface InputRequired {
  readonly inputRequests: Readonly<Record<string, unknown>>
  readonly requestState: unknown
}

/**
 * The typed error a JSON-RPC error of the stateless era stands for, whether
 * it came as a JSON-RPC error or (over HTTP) as the body of a 4xx answer;
 * `undefined` leaves the error as it is. A refusal for now (503 or 429 with
 * `Retry-After`) stays the `HttpError` it is, whatever its body says, as in
 * the handshake era: its status and its wait are what a caller acts on.
 */
export const typedError = (method: string, error: unknown): FlatError | ModernError | undefined => {
  if (error instanceof RpcError) return Negotiation.modernError(error.code, error.data, method, error.rpcMessage)
  if (typeof error !== "object" || error === null || (error as { _tag?: unknown })._tag !== "HttpError") return undefined
  if (UnavailableRetry.askedWait(error) !== undefined) return undefined
  const rpc = Negotiation.rpcErrorFromHttpBody((error as { body: string }).body)
  if (rpc === undefined) return undefined
  return Negotiation.modernError(rpc.code, rpc.data, method, rpc.message) ??
    new RpcError({ code: rpc.code, rpcMessage: rpc.message, data: rpc.data, method })
}

/** Whether a header mismatch is about the `Mcp-Param-*` headers (then a fresh tool list may fix it). */
const aboutParamHeaders = (error: HeaderMismatch): boolean =>
  /mcp-param-/i.test(error.rpcMessage) || /mcp-param-/i.test(JSON.stringify(error.data ?? ""))

export const make = (options: ModernOptions) => {
  const { calls } = options
  const metaOf = () => options.meta(options.logLevel())

  /** Runs the client's handlers on every input request; the answers keyed as the server keyed them. */
  const answerAll = (method: string, input: InputRequired) =>
    Effect.forEach(
      Object.entries(input.inputRequests),
      ([key, request]): Effect.Effect<readonly [string, unknown], InvalidPayload | RpcError> => {
        const r = (typeof request === "object" && request !== null ? request : {}) as { method?: unknown; params?: unknown }
        if (typeof r.method !== "string") {
          return Effect.fail(new InvalidPayload({ method, kind: "result", reason: `input request ${key} has no method` }))
        }
        return Effect.map(
          options.answer(JsonRpc.request(key, r.method, r.params) as JsonRpc.JsonRpcRequest),
          (answer) => [key, answer] as const
        )
      },
      { concurrency: "unbounded" }
    ).pipe(Effect.map((entries) => Object.fromEntries(entries)))

  /**
   * One call: its rounds, each a request of the call engine. A round's
   * decode step is where the call goes on: a complete result (or a task) is
   * decoded there and is the call's value, an `input_required` result is
   * answered there and the next round sent from there. The common call (one
   * round, complete) thus adds nothing to the engine's request but this
   * check of `resultType`: no frame of its own, no wrapper around its value.
   * A round's request failure is given its typed error by the engine
   * (`mapError`); what the decode steps fail with (`InvalidPayload`,
   * `TooManyInputRounds`, a handler's refusal) has none.
   */
  const send = <A>(
    method: string,
    params: Params | undefined,
    callOptions: CallOptions | undefined,
    decode: Decode<A>
  ): Effect.Effect<A, FlatError | ModernError> => {
    const tool = method === "tools/call" && typeof params?.name === "string" ? params.name : undefined
    const typed = (error: FlatError): FlatError => typedError(method, error) ?? error
    const multiRound = MULTI_ROUND.has(method)

    /** The decode step of round `round` (the first is 0). */
    const decodeRound = (round: number): Decode<A> => (raw) => {
      const resultType = typeof raw === "object" && raw !== null ? (raw as { resultType?: unknown }).resultType : undefined
      // A task (the tasks extension) is the decoder's to accept or refuse: McpClient's know which methods allow one.
      if (resultType === undefined || resultType === "complete" || resultType === "task") return decode(raw)
      if (resultType === "input_required" && multiRound) {
        if (round >= options.maxInputRounds) return Effect.fail(new TooManyInputRounds({ method, rounds: round }))
        const r = raw as { inputRequests?: unknown; requestState?: unknown }
        const input: InputRequired = {
          inputRequests: typeof r.inputRequests === "object" && r.inputRequests !== null
            ? r.inputRequests as Record<string, unknown>
            : {},
          requestState: r.requestState
        }
        return Effect.flatMap(answerAll(method, input), (inputResponses) =>
          roundOf(
            round + 1,
            input.requestState === undefined ? { inputResponses } : { inputResponses, requestState: input.requestState }
          ))
      }
      return Effect.fail(
        new InvalidPayload({
          method,
          kind: "result",
          reason: resultType === "input_required"
            ? `input_required is not allowed on ${method}`
            : `unknown resultType ${JSON.stringify(resultType)}`
        })
      )
    }
    const decodeFirst = decodeRound(0)

    // The `_meta` (its log level) is read when a round is sent, so that a call effect run again
    // later carries the level set since; so are the `Mcp-Param-*` headers, so that a retry after a
    // refresh sees the new tool list. Without headers the engine reads the `_meta` itself: no
    // step or body of this layer's own per round.
    const roundOf = (round: number, extra: Params | undefined): Effect.Effect<A, FlatError | ModernError> => {
      const decodeThis = round === 0 ? decodeFirst : decodeRound(round)
      const body = extra === undefined ? params : { ...params, ...extra }
      if (tool === undefined || options.paramHeaders === undefined) {
        return calls.send(method, body, callOptions, decodeThis, undefined, typed, metaOf)
      }
      const paramHeaders = options.paramHeaders
      return Effect.suspend(() => {
        const headers = paramHeaders(tool, params?.arguments)
        return calls.send(method, body, callOptions, decodeThis, headers === undefined ? undefined : { headers }, typed, metaOf)
      })
    }
    const first = roundOf(0, undefined)
    if (tool === undefined || options.paramHeaders === undefined) return first
    return Effect.catchTag(first, "HeaderMismatch", (error) =>
      aboutParamHeaders(error)
        ? Effect.andThen(options.refreshTools, roundOf(0, undefined))
        : Effect.fail(error))
  }

  return { send }
}

/** The `_meta` builder of one client: two objects made once, since the version and capabilities are fixed. */
export const metaBuilder = (base: RequestMeta.ClientMeta) => {
  const plain = RequestMeta.requestMeta({ ...base, logLevel: undefined })
  const byLevel = new Map<string, Params>()
  return (logLevel: string | undefined): Params => {
    if (logLevel === undefined) return plain
    let meta = byLevel.get(logLevel)
    if (meta === undefined) {
      meta = RequestMeta.requestMeta({ ...base, logLevel })
      byLevel.set(logLevel, meta)
    }
    return meta
  }
}
