// Type-level checks, compiled by `tsc --noEmit` with the rest of the project: a line marked
// `@ts-expect-error` that compiles is itself an error, so refusals are checked too.
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as Effect from "effect/Effect"
import * as McpClient from "../../src/client/McpClient.ts"
import * as NodeSpawner from "../../src/client/NodeSpawner.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"

declare const target: string

// The transport chosen at run time: either branch type-checks, and the requirements add up.
export const either = Effect.gen(function*() {
  const client = yield* McpClient.connect(
    target.startsWith("http")
      ? StreamableHttpClientTransport.make({ url: target })
      : StdioClientTransport.make({ command: target })
  )
  return yield* client.listAllTools()
}).pipe(Effect.scoped, Effect.provide([NodeHttpClient.layerUndici, NodeSpawner.layer]))

// Anything but a client transport is refused.
// @ts-expect-error an Effect of a number is not a transport
export const notATransport = McpClient.connect(Effect.succeed(1))
