/**
 * The command-line program, run when main.ts imports this module (after its
 * Node.js version check): inspect, call and ping any MCP server (a URL, or a
 * command after `--`), serve the example server, bridge transports.
 *
 * argv is split at the first `--` here rather than in effect/cli: the words
 * after it are the server's command line, and effect/cli would append them
 * to the subcommand's positionals where they could not be told apart from
 * the words before `--`. They reach the commands through `Target.Trailing`.
 */
// Subpath imports: the package index loads every Node module it has (cluster, Redis, …), which slows startup.
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import { Command } from "effect/cli"
import * as Bridge from "./commands/bridge.ts"
import * as Call from "./commands/call.ts"
import * as Inspect from "./commands/inspect.ts"
import * as Logout from "./commands/logout.ts"
import * as Ping from "./commands/ping.ts"
import * as Serve from "./commands/serve.ts"
import * as Output from "./Output.ts"
import * as Session from "./Session.ts"
import * as Target from "./Target.ts"

const root = Command.make(Output.PROGRAM).pipe(
  Command.withDescription("Inspect, call and ping MCP servers over stdio, Streamable HTTP or legacy SSE"),
  Command.withSubcommands([Inspect.command, Call.command, Ping.command, Serve.command, Bridge.command, Logout.command]),
  Command.withGlobalFlags(Output.globalFlags)
)

const argv = process.argv.slice(2)
const split = argv.indexOf("--")
const words = split === -1 ? argv : argv.slice(0, split)
const trailing = split === -1 ? [] : argv.slice(split + 1)

Command.runWith(root, { version: Session.VERSION })(words).pipe(
  Output.finish,
  Effect.provideService(Target.Trailing, trailing),
  Effect.provide(Layer.mergeAll(
    NodeServices.layer,
    NodeHttpClient.layerUndici,
    Output.presenterLayer,
    Layer.succeed(Logger.LogToStderr, true)
  )),
  NodeRuntime.runMain
)
