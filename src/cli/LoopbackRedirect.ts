/**
 * The CLI's half of a browser sign-in: a listener on 127.0.0.1 that the
 * authorization server redirects the browser to (`http://127.0.0.1:PORT/callback`,
 * RFC 8252 loopback redirect), handed to the OAuth provider as its
 * `interaction`.
 *
 * Only a GET of `/callback` carrying the `state` of the sign-in under way ends
 * the wait. Anything else (another path, another or no state, a request
 * before the sign-in started) gets an error page and changes nothing, so
 * another local process cannot end or hijack the sign-in by calling first.
 * The listener is closed once the redirect arrived or the wait ended
 * (timeout, interruption), and with the scope; a later sign-in in the same
 * run binds the same port again.
 */
import { spawn } from "node:child_process"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { Interaction } from "../client/auth/OAuthProvider.ts"
import { reasonOf } from "../McpErrorGroup.ts"

/** The path the authorization server redirects to. */
export const CALLBACK_PATH = "/callback"

/** The loopback port could not be bound. */
export class LoopbackUnavailable extends Data.TaggedError("LoopbackUnavailable")<{
  readonly port: number
  readonly reason: string
}> {
  override get message(): string {
    return `cannot listen for the sign-in redirect on 127.0.0.1:${this.port}: ${this.reason}`
  }
}

/** No sign-in came back within `--login-timeout`. */
export class LoginTimeout extends Data.TaggedError("LoginTimeout")<{ readonly after: Duration.Duration }> {
  override get message(): string {
    return `sign-in timed out: no redirect reached the loopback listener within ${Duration.format(this.after)}; ` +
      "run the command again and finish signing in in the browser (or raise --login-timeout)"
  }
}

/** The OAuth provider's way of saying the redirect did not come back in time. */
export const isTimeout = (failure: unknown): boolean => {
  const error = reasonOf(failure)
  return typeof error === "object" && error !== null && (error as { _tag?: unknown })._tag === "AuthorizationRefused" &&
    (error as { error?: unknown }).error === "timeout"
}

export interface Options {
  /** The port to bind; 0 (default) takes a free one. */
  readonly port?: number | undefined
  /** Shows the authorization URL (the CLI prints it on stderr). */
  readonly announce: (authorizationUrl: string) => Effect.Effect<void>
  /** Also hand the URL to this command (e.g. `xdg-open`), without waiting for it. Default none. */
  readonly opener?: string | undefined
}

export interface LoopbackRedirect {
  readonly port: number
  /** `http://127.0.0.1:PORT/callback`. */
  readonly redirectUrl: string
  readonly interaction: Interaction
}

// Fixed texts only: nothing from the request is reflected into a page.
const page = (status: number, title: string, text: string) => ({
  status,
  body: `<!doctype html><meta charset="utf-8"><title>${title}</title><p>${text}</p>\n`
})
const SIGNED_IN = page(200, "Signed in", "Signed in. You can close this tab and return to the terminal.")
const NOT_EXPECTED = page(
  400,
  "Not the expected sign-in",
  "This is not the sign-in response the command is waiting for; it was ignored."
)
const NOT_FOUND = page(404, "Not found", "Not found.")

const listen = (server: http.Server, port: number): Promise<number> =>
  new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error)
    server.once("error", onError)
    server.listen(port, "127.0.0.1", () => {
      server.off("error", onError)
      resolve((server.address() as AddressInfo).port)
    })
  })

const close = (server: http.Server): Promise<void> =>
  new Promise((resolve) => {
    if (!server.listening) return resolve()
    server.closeAllConnections()
    server.close(() => resolve())
  })

/** Starts `opener URL` detached and forgets it: a missing or slow browser never holds the sign-in up. */
const launch = (opener: string, url: string): void => {
  try {
    const child = spawn(opener, [url], { detached: true, stdio: "ignore", shell: false })
    child.on("error", () => {})
    child.unref()
  } catch {
    // The URL is printed anyway.
  }
}

/** Binds the listener (closed with the scope) and returns the interaction that uses it. */
export const make = (options: Options): Effect.Effect<LoopbackRedirect, LoopbackUnavailable, Scope.Scope> =>
  Effect.gen(function*() {
    /** The state of the sign-in under way (cleared once its redirect came), and where the redirect goes. */
    let expected: string | undefined
    let redirect: Deferred.Deferred<string> | undefined
    let port = options.port ?? 0

    const server = http.createServer((req, res) => {
      const url = new URL(req.url ?? "/", `http://127.0.0.1:${port}`)
      const answer = (p: { status: number; body: string }) => {
        res.writeHead(p.status, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" })
        res.end(p.body)
      }
      if (url.pathname !== CALLBACK_PATH) return answer(NOT_FOUND)
      if (
        req.method !== "GET" || expected === undefined || redirect === undefined ||
        url.searchParams.get("state") !== expected
      ) {
        return answer(NOT_EXPECTED)
      }
      expected = undefined
      answer(SIGNED_IN)
      Deferred.doneUnsafe(redirect, Effect.succeed(url.href))
    })

    const bind = Effect.tryPromise({
      try: () => listen(server, port),
      catch: (error) => new LoopbackUnavailable({ port, reason: error instanceof Error ? error.message : String(error) })
    })
    port = yield* bind
    yield* Effect.addFinalizer(() => Effect.promise(() => close(server)))
    const redirectUrl = `http://127.0.0.1:${port}${CALLBACK_PATH}`

    const interaction: Interaction = {
      openUrl: (authorizationUrl) =>
        Effect.gen(function*() {
          // A URL without a state could be answered by anyone: such a sign-in never completes here.
          expected = new URL(authorizationUrl).searchParams.get("state") ?? undefined
          redirect = yield* Deferred.make<string>()
          // Closed after an earlier sign-in of this run: the same port, which the redirect URI names.
          if (!server.listening) yield* Effect.orDie(bind)
          yield* options.announce(authorizationUrl)
          if (options.opener !== undefined) launch(options.opener, authorizationUrl)
        }),
      receiveRedirect: Effect.suspend(() =>
        redirect === undefined ? Effect.never : Deferred.await(redirect)
      ).pipe(
        Effect.ensuring(Effect.promise(() => close(server)))
      )
    }
    return { port, redirectUrl, interaction }
  })

/**
 * The opener `--open` uses: `$BROWSER` when set, else the platform's
 * (`open` on macOS, `xdg-open` elsewhere; Windows has none that takes a URL
 * as its only argument, so the URL is only printed there).
 */
export const defaultOpener = (): string | undefined => {
  const browser = process.env.BROWSER?.trim()
  if (browser !== undefined && browser !== "") return browser
  if (process.platform === "darwin") return "open"
  if (process.platform === "win32") return undefined
  return "xdg-open"
}
