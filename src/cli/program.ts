/**
 * The command-line program, run when main.ts imports this module (after its
 * Node.js version check and the answers it gives without the program):
 * inspect, call, read, ping … any MCP server (a URL, or a command after
 * `--`), serve the example server, bridge transports.
 *
 * Only the module of the subcommand named on the command line is loaded (a
 * command's module loads the client, the server or the OAuth code it needs);
 * when no known subcommand is named (the root's help, a typo), all are, so
 * effect/cli can list them.
 *
 * argv is split at the first `--` here rather than in effect/cli: the words
 * after it are the server's command line, and effect/cli would append them
 * to the subcommand's positionals where they could not be told apart from
 * the words before `--`. They reach the commands through `Trailing`.
 */
// Subpath imports: the package index loads every Node module it has (cluster, Redis, …), which slows startup.
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import { CliConfig, Command } from "effect/cli"
import * as HttpClientLayer from "./HttpClientLayer.ts"
import * as Output from "./Output.ts"
import * as Subcommands from "./Subcommands.ts"
import * as Telemetry from "./TelemetryFlag.ts"
import * as Trailing from "./Trailing.ts"
import * as Version from "./Version.ts"

const argv = process.argv.slice(2)
const split = argv.indexOf("--")
const words = split === -1 ? argv : argv.slice(0, split)
const trailing = split === -1 ? [] : argv.slice(split + 1)

const subcommand = Subcommands.named(words)

// Export over OTLP (docs/observability.md) when the environment names a collector; the exporter is
// loaded only then, so a start-up without it pays nothing.
const telemetry = Telemetry.wanted(subcommand, process.env)
  ? (await import("../Telemetry.ts")).layerFromEnv({ serviceName: `effect-mcp-transport ${subcommand}` })
  : Layer.empty

const root = Command.make(Output.PROGRAM).pipe(
  Command.withDescription(Subcommands.DESCRIPTION),
  Command.withSubcommands(await Subcommands.load(subcommand)),
  Command.withGlobalFlags(Output.globalFlags)
)

Command.runWith(root, { version: Version.VERSION })(words).pipe(
  Output.finish,
  Effect.provideService(Trailing.Trailing, trailing),
  Effect.provide(Layer.mergeAll(
    NodeServices.layer,
    HttpClientLayer.layerFor(subcommand),
    Output.presenterLayer,
    CliConfig.layer({ builtIns: Output.builtIns }),
    Layer.succeed(Logger.LogToStderr, true),
    telemetry
  )),
  NodeRuntime.runMain
)
