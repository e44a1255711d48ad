/**
 * An McpManager stdio entry's `stderr`: decoded by the configuration schema
 * and handed to the stdio transport as its `stderr.mode` by the default
 * transport factory. What the transport kept shows in the close of a server
 * that dies after writing to stderr.
 */
import { NodeHttpClient, NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as McpManager from "../../../src/client/McpManager.ts"
import { testServerPath } from "../../fixtures/stdio-helpers.ts"

const { Config } = McpManager
// The default factory serves HTTP entries too, so it asks for an HttpClient; these entries use none.
const services = Layer.mergeAll(NodeServices.layer, NodeHttpClient.layerUndici)

/** The stderr lines a server's close carries when the entry is opened by the default factory. */
const tailOnDeath = (entry: McpManager.Config.StdioServerConfig) =>
  Effect.gen(function*() {
    const transport = yield* McpManager.fromConfigTransport("dying", entry)
    const error = yield* Effect.flip(transport.request("test/exit", { code: 3, stderr: ["panic: out of cheese"] }))
    return (error as { readonly stderrTail?: ReadonlyArray<string> }).stderrTail
  }).pipe(Effect.scoped, Effect.provide(services))

describe("McpManager stdio entries with stderr", () => {
  it.effect("decodes \"pipe\", \"inherit\" and \"ignore\"; refuses any other value, naming the field", () =>
    Effect.gen(function*() {
      const decoded = yield* Config.decode({
        mcpServers: {
          kept: { command: "srv", stderr: "pipe" },
          shown: { command: "srv", stderr: "inherit" },
          dropped: { command: "srv", stderr: "ignore" },
          loud: { command: "srv", stderr: "loud" }
        }
      })
      expect(decoded.servers.map((s) => [s.name, (s.config as { stderr?: string }).stderr])).toEqual([
        ["kept", "pipe"],
        ["shown", "inherit"],
        ["dropped", "ignore"]
      ])
      expect(decoded.invalid.map((e) => e.server)).toEqual(["loud"])
      expect(decoded.invalid[0]!.reason).toContain("stderr")
    }))

  it.live("the default factory keeps the server's stderr unless the entry says otherwise", () =>
    Effect.gen(function*() {
      const entry = { command: process.execPath, args: [testServerPath] }
      expect(yield* tailOnDeath(entry)).toEqual(["panic: out of cheese"])
      expect(yield* tailOnDeath({ ...entry, stderr: "ignore" })).toEqual([])
    }))
})
