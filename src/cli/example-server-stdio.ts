/**
 * The example server on stdio, as a program of its own (no CLI parsing):
 * what `npm start` spawns as its stdio child. Exits 0 when stdin ends.
 * Run: npx node src/cli/example-server-stdio.ts
 */
// Subpath imports: the package's index loads every Node module it has, which a small child should not pay for.
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as Effect from "effect/Effect"
import * as StdioServerTransport from "../server/StdioServerTransport.ts"
import * as ExampleServer from "./ExampleServer.ts"

ExampleServer.runStdio().pipe(
  Effect.provide([NodeServices.layer, StdioServerTransport.layerLogger]),
  NodeRuntime.runMain
)
