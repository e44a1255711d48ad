/**
 * When a request is sent again because the server asks to be asked later
 * (`HttpExchange.execute` does the sending): a 503 or a 429 whose
 * `Retry-After` the policy is willing to wait for. A draining
 * instance of a fleet, a full server and one whose shared store is down all
 * answer that way before running anything, so the next attempt (through a
 * load balancer, on another instance) usually succeeds. A tool call is not
 * sent again unless the policy says so: a server may refuse after the tool
 * ran (this project's does when its store fails under a request), and a tool
 * with effects would run twice.
 *
 * The wait is a `Clock` sleep in the caller's fiber, so a request's deadline
 * and its caller's interruption cut it short like any other part of the send.
 */
import * as Duration from "effect/Duration"
import type { HttpError } from "../../McpError.ts"

/**
 * When a refused POST is sent again (`retryUnavailable`).
 *
 * @since 0.1.0
 * @category models
 */
export interface RetryUnavailableOptions {
  /** Attempts after the first. Default 2. */
  readonly attempts?: number | undefined
  /** The longest `Retry-After` waited for; a refusal asking for longer fails at once. Default 5 seconds. */
  readonly maxDelay?: Duration.Input | undefined
  /** Send `tools/call` again too: only for tools that may run twice. Default false. */
  readonly toolCalls?: boolean | undefined
}

export interface Policy {
  readonly attempts: number
  readonly maxDelayMs: number
  readonly toolCalls: boolean
}

const DEFAULT: Policy = { attempts: 2, maxDelayMs: 5_000, toolCalls: false }

/** The policy of a transport's options: the default when absent, none when `false`. */
export const policy = (options: RetryUnavailableOptions | false | undefined): Policy | undefined => {
  if (options === false) return undefined
  if (options === undefined) return DEFAULT
  return {
    attempts: Math.max(0, Math.floor(options.attempts ?? DEFAULT.attempts)),
    maxDelayMs: options.maxDelay === undefined
      ? DEFAULT.maxDelayMs
      : Duration.toMillis(Duration.fromInputUnsafe(options.maxDelay)),
    toolCalls: options.toolCalls ?? DEFAULT.toolCalls
  }
}

const DELTA_SECONDS = /^\d+$/
/** An HTTP date names its day and month; `Date.parse` would also take "-1" or "2026". */
const HAS_LETTER = /[A-Za-z]/

/**
 * A `Retry-After` value as milliseconds from `nowMs`: delay-seconds, or an
 * HTTP date (a date already past is no wait). `undefined` for anything else.
 */
export const retryAfterMs = (value: string | undefined, nowMs: number): number | undefined => {
  if (value === undefined) return undefined
  const text = value.trim()
  if (DELTA_SECONDS.test(text)) return Number(text) * 1000
  if (!HAS_LETTER.test(text)) return undefined
  const at = Date.parse(text)
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs)
}

/**
 * How long to wait before sending `method` again after an answer with
 * `status` and a `Retry-After` of `retryAfterMs`; `undefined`: the answer
 * stands.
 */
export const delayFor = (
  policy: Policy,
  method: string | undefined,
  status: number,
  retryAfterMs: number | undefined
): number | undefined => {
  if (status !== 503 && status !== 429) return undefined
  if (retryAfterMs === undefined || retryAfterMs > policy.maxDelayMs) return undefined
  return method === "tools/call" && !policy.toolCalls ? undefined : retryAfterMs
}

/**
 * The wait a refusal for now asks of a `GET` that resumes a stream: no
 * request runs again, so a tool call's is waited for too. `undefined`:
 * not such a refusal, or a wait the policy declines.
 */
export const resumeDelay = (policy: Policy | undefined, error: unknown): number | undefined =>
  policy !== undefined && isHttpError(error) ? delayFor(policy, undefined, error.status, error.retryAfterMs) : undefined

/** The wait a refusal for now asks, whatever its length; `undefined` for any other failure. */
export const askedWait = (error: unknown): number | undefined =>
  isHttpError(error) && (error.status === 503 || error.status === 429) ? error.retryAfterMs : undefined

const isHttpError = (error: unknown): error is HttpError =>
  typeof error === "object" && error !== null && (error as { _tag?: unknown })._tag === "HttpError"
