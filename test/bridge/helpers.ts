/**
 * Shared by the bridge tests: a stdio server (a real child process) exposed
 * over Streamable HTTP on 127.0.0.1:0 through `Bridge.layerHttp`, with the
 * pid of every upstream it spawned.
 */
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { Context, Effect, Layer, Option, type Scope } from "effect"
import * as Bridge from "../../src/bridge/Bridge.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import * as HttpServerTransport from "../../src/server/HttpServerTransport.ts"

export const routerServer = fileURLToPath(new URL("../fixtures/router-stdio-server.ts", import.meta.url))
export const rawServer = fileURLToPath(new URL("../fixtures/stdio-test-server.ts", import.meta.url))

export interface Bridged {
  readonly url: string
  readonly bridge: Bridge.BridgeShape
  readonly transport: HttpServerTransport.HttpServerTransportShape
  /** Pids of the upstream processes, in spawn order. */
  readonly pids: Array<number>
}

/** `node <script> <args>` exposed over HTTP for the life of the scope. */
export const bridgeOverHttp = (
  script: string = routerServer,
  args: ReadonlyArray<string> = [],
  http: HttpServerTransport.Options = {},
  bridge: Omit<Bridge.BridgeOptions, "connect"> = {}
): Effect.Effect<Bridged, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const pids: Array<number> = []
    const connect = StdioClientTransport.make({
      command: process.execPath,
      args: [script, ...args],
      shutdown: { gracePeriod: "500 millis", killAfter: "500 millis" },
      stderr: { log: false }
    }).pipe(Effect.tap((t) => Effect.sync(() => void pids.push(t.pid))))
    const services = yield* Layer.build(
      Bridge.layerHttp({ ...bridge, connect }, { port: 0, ...http }).pipe(Layer.provide(NodeServices.layer))
    )
    const transport = Context.get(services, HttpServerTransport.HttpServerTransport)
    return {
      url: Option.getOrThrow(transport.url),
      bridge: Context.get(services, Bridge.Bridge),
      transport,
      pids
    }
  })

/** Polls `check` every few milliseconds until `ok`, at most `times` times; returns the last value. */
export const eventually = <A, E, R>(check: Effect.Effect<A, E, R>, ok: (a: A) => boolean, times = 400) =>
  Effect.gen(function*() {
    let last = yield* check
    for (let i = 0; i < times && !ok(last); i++) {
      yield* Effect.sleep("5 millis")
      last = yield* check
    }
    return last
  })

export const textOf = (result: { readonly content: ReadonlyArray<unknown> }) =>
  (result.content as ReadonlyArray<{ type: string; text?: string }>).map((c) => c.text ?? `<${c.type}>`).join("")
