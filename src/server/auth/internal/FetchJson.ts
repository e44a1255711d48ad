/**
 * One JSON document from an authorization server (a key set, an
 * introspection answer), with a deadline and a size bound: a slow or
 * hostile endpoint must not hold a request, or the server's memory, for
 * long. Redirects are refused, so the document comes from the URL
 * configured and nowhere else.
 */
import * as Effect from "effect/Effect"
import { VerifierUnavailable } from "../TokenVerifier.ts"

const MAX_BYTES = 1024 * 1024

export const fetchJson = (
  url: string,
  init: RequestInit,
  timeoutMs: number
): Effect.Effect<unknown, VerifierUnavailable> =>
  Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(url, { ...init, redirect: "error", signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) })
      if (!response.ok) {
        await response.body?.cancel()
        throw new Error(`${url} answered ${response.status}`)
      }
      const declared = Number(response.headers.get("content-length"))
      if (Number.isFinite(declared) && declared > MAX_BYTES) {
        await response.body?.cancel()
        throw new Error(`${url} sent more than ${MAX_BYTES} bytes`)
      }
      const text = await response.text()
      if (text.length > MAX_BYTES) throw new Error(`${url} sent more than ${MAX_BYTES} bytes`)
      return JSON.parse(text) as unknown
    },
    catch: (cause) =>
      new VerifierUnavailable({
        reason: cause instanceof Error ? cause.message : `${url} could not be read`,
        cause
      })
  })
