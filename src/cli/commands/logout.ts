/**
 * `effect-mcp-transport logout <url> | --all`: forgets stored sign-ins, so
 * the next `--auth` run signs in through the browser again. With a URL, the
 * tokens for that server (those whose resource covers it); with `--all`,
 * everything in the token file, client registrations included.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Argument, Command, Flag } from "effect/cli"
import * as Discovery from "../../client/auth/Discovery.ts"
import * as FileTokenStore from "../../client/auth/FileTokenStore.ts"
import * as TokenStore from "../../client/auth/TokenStore.ts"
import * as LoginFlags from "../LoginFlags.ts"
import * as Output from "../Output.ts"

export const command = Command.make(
  "logout",
  {
    url: Argument.String("url").pipe(
      Argument.withDescription("The server whose stored sign-in to remove"),
      Argument.optional
    ),
    all: Flag.Boolean("all").pipe(
      Flag.withDescription("Remove every stored sign-in and client registration"),
      Flag.withDefault(false)
    ),
    tokenStore: LoginFlags.tokenStoreFlag
  },
  ({ all, tokenStore, url }) =>
    Output.run(Effect.gen(function*() {
      if (all === Option.isSome(url)) {
        return yield* new Output.UsageError({ message: "give the server's URL, or --all" })
      }
      const file = yield* LoginFlags.tokenStorePath(tokenStore)
      const store = yield* FileTokenStore.make(file)
      let removed = 0
      yield* store.update((contents) => {
        const kept = Object.values(contents.tokens).filter((t) =>
          Option.isSome(url) && !Discovery.resourceCovers(t.resource, url.value)
        )
        removed = Object.keys(contents.tokens).length - kept.length
        return all ? TokenStore.empty : kept.reduce(TokenStore.withTokens, { ...contents, tokens: {} })
      })
      const json = yield* Output.Json
      const what = Option.isSome(url) ? url.value : "every server"
      yield* json
        ? Output.json({ removed, server: Option.getOrNull(url), tokenStore: file })
        : Output.line(removed === 0 ? `no stored sign-in for ${what}` : `signed out of ${what} (${removed} removed)`)
    }))
).pipe(
  Command.withDescription("Remove stored OAuth sign-ins (one server, or all with --all); the next --auth run signs in again"),
  Command.withExamples([
    { command: "effect-mcp-transport logout https://example.com/mcp", description: "Forget the sign-in to one server" },
    { command: "effect-mcp-transport logout --all", description: "Forget every sign-in" }
  ])
)
