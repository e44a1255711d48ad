/**
 * The JWT bearer grant (RFC 7523 §2.1) for workload identity: the
 * application supplies a JWT its platform issued (a Kubernetes service
 * account token, a cloud workload identity token…) and the authorization
 * server trades it for an access token. The JWT is read afresh for every
 * grant, since platforms rotate it; it is never logged.
 */
import { readFile } from "node:fs/promises"
import * as Effect from "effect/Effect"
import { AssertionUnavailable } from "../../AuthError.ts"

/**
 * Where the JWT of the grant comes from: run once per token request.
 *
 * @since 0.1.0
 * @category models
 */
export type Source = Effect.Effect<string, unknown>

const COMPACT_JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/

/**
 * Runs `source` and checks it gave a compact JWT; `AssertionUnavailable`
 * (of `kind`) when it failed or gave something else.
 *
 * @since 0.1.0
 * @category constructors
 */
export const read = (
  source: Source,
  kind: "jwt-bearer" | "identity-token" = "jwt-bearer"
): Effect.Effect<string, AssertionUnavailable> =>
  source.pipe(
    Effect.mapError((cause) =>
      new AssertionUnavailable({
        kind,
        reason: `its source failed${cause instanceof Error ? ` (${cause.message})` : ""}`
      })
    ),
    Effect.flatMap((text) => {
      const jwt = text.trim()
      return COMPACT_JWT.test(jwt)
        ? Effect.succeed(jwt)
        : Effect.fail(new AssertionUnavailable({ kind, reason: "its source gave something that is not a compact JWT" }))
    })
  )

/**
 * A source reading the JWT from the file at `path` each time (surrounding
 * whitespace is ignored), e.g. a projected service account token.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromFile = (path: string): Source =>
  Effect.tryPromise({
    try: () => readFile(path, "utf8"),
    catch: (cause) => new Error(`cannot read ${path}: ${(cause as NodeJS.ErrnoException).code ?? "error"}`)
  })
