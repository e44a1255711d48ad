/**
 * `--log-level`: the server's log messages (`notifications/message`) on
 * stderr, one line each, while a command's session lasts.
 *
 * The level reaches the server as `logging/setLevel` in the handshake era and
 * as the `logLevel` every request carries in the stateless era; McpClient's
 * `setLoggingLevel` does whichever the session speaks. A server that does not
 * declare `logging` gets nothing and a warning says so: the command goes on.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { LoggingMessage, McpClientError, McpClientShape } from "../client/McpClient.ts"
import * as Output from "./Output.ts"

/** `[server warning db] connection slow`: the level, the logger when named, then the data (JSON unless a string). */
export const format = (message: LoggingMessage): string => {
  const logger = message.logger === undefined ? "" : ` ${message.logger}`
  const data = typeof message.data === "string" ? message.data : JSON.stringify(message.data)
  return `[server ${message.level}${logger}] ${data}`
}

/** Prints the server's log messages on stderr from now until the scope closes, and asks for `level` and up. */
export const follow = (
  client: McpClientShape,
  level: Output.LogLevel
): Effect.Effect<void, McpClientError, Scope.Scope> =>
  Effect.gen(function*() {
    if (client.serverCapabilities.logging === undefined) {
      return yield* Output.note(
        `${Output.PROGRAM}: the server does not declare logging: --log-level ${level} asks it for nothing`
      )
    }
    // Subscribed before the level is asked for, so no message sent in reply is missed.
    yield* client.logging.pipe(
      Stream.runForEach((message) => Output.note(format(message))),
      Effect.forkScoped({ startImmediately: true })
    )
    yield* client.setLoggingLevel(level)
  })
