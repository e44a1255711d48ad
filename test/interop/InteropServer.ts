/**
 * The server side of the HTTP interop tests: an `McpServer` definition
 * mounted on `HttpServerTransport` on 127.0.0.1:0, plus a client-side
 * `HttpClient` that records every exchange, so a test can say what went over
 * the wire (JSON or SSE answers, resume GETs, the closing DELETE).
 *
 * Tools: `progress {steps}` (progress 1..steps, needs a token), `roots`
 * (asks the client for `roots/list`, capability-checked), `roots-raw` (the
 * same without the check, for stateless mode where the server knows no client
 * capabilities), `slow` (runs until interrupted; the probe sees start and
 * interruption), `reconnect` (progress, closes its SSE connection, progress
 * again and answers: everything after the close reaches the client only by
 * resumption).
 */
import { NodeHttpClient } from "@effect/platform-node"
import { Context, Deferred, Effect, Layer, Option, type Scope, Schema } from "effect"
import { HttpClient } from "effect/http"
import type * as JsonRpc from "../../src/JsonRpc.ts"
import { RpcError } from "../../src/McpError.ts"
import * as EventStore from "../../src/server/EventStore.ts"
import type { Handler, HandlerContext } from "../../src/server/Handler.ts"
import * as HttpServerTransport from "../../src/server/HttpServerTransport.ts"
import * as McpServer from "../../src/server/McpServer.ts"

/** The transport's raw context, for the one tool that needs the HTTP-only `closeSseStream`. */
class TransportCall extends Context.Service<TransportCall, HandlerContext>()("test/interop/TransportCall") {}

export interface Probe {
  /** Completes with the request id once a `slow` call is running. */
  readonly slowStarted: Deferred.Deferred<JsonRpc.RequestId>
  /** Completes with the request id when a `slow` call was interrupted. */
  readonly slowInterrupted: Deferred.Deferred<JsonRpc.RequestId>
}

const text = (t: string) => ({ content: [{ type: "text", text: t }] })

const CallParams = Schema.Struct({
  name: Schema.String,
  arguments: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
})

const tools = ["progress", "roots", "roots-raw", "slow", "reconnect"].map((name) => ({
  name,
  description: `interop tool ${name}`,
  inputSchema: { type: "object" }
}))

const definition = (probe: Probe, options: { readonly stateless: boolean }) =>
  McpServer.make({
    serverInfo: { name: "interop-server", version: "1.0.0" },
    // Stateless requests carry no session, so there is no initialized phase to wait for.
    enforceInitialized: !options.stateless
  }).pipe(
    McpServer.method("tools/list", {}, () => Effect.succeed({ tools })),
    McpServer.method("tools/call", { params: CallParams }, (p, ctx) =>
      Effect.gen(function*() {
        const args = p.arguments ?? {}
        switch (p.name) {
          case "progress": {
            const steps = Number(args.steps ?? 3)
            for (let i = 1; i <= steps; i++) yield* ctx.progress(i, { total: steps, message: `step ${i}` })
            return text(`done ${steps} (token ${ctx.progressToken === undefined ? "absent" : "present"})`)
          }
          case "roots": {
            const roots = yield* ctx.listRoots
            return text(roots.map((r) => r.uri).join(","))
          }
          case "roots-raw": {
            const outcome = yield* Effect.result(ctx.request("roots/list", {}, { timeout: Number(args.timeoutMs ?? 2000) }))
            return outcome._tag === "Success"
              ? text(`answered ${JSON.stringify(outcome.success)}`)
              : text(`failed ${outcome.failure._tag}`)
          }
          case "slow":
            yield* Deferred.succeed(probe.slowStarted, ctx.requestId)
            return yield* Effect.never.pipe(
              Effect.onInterrupt(() => Deferred.succeed(probe.slowInterrupted, ctx.requestId))
            )
          case "reconnect": {
            const call = yield* TransportCall
            yield* ctx.progress(1, { total: 2, message: "before the close" })
            if (call.closeSseStream === undefined) {
              return yield* new RpcError({ code: -32603, rpcMessage: "no closeSseStream on this transport" })
            }
            yield* call.closeSseStream()
            // Produced after the connection ended: only a resumed stream can deliver these.
            yield* ctx.progress(2, { total: 2, message: "while the client was away" })
            return text("reconnected")
          }
          default:
            return yield* new RpcError({ code: -32602, rpcMessage: `Unknown tool: ${p.name}` })
        }
      }))
  )

export interface Server {
  readonly url: string
  readonly base: string
  readonly transport: HttpServerTransport.HttpServerTransportShape
  readonly handle: McpServer.ServerHandle<TransportCall>
  readonly probe: Probe
  readonly eventStore: EventStore.EventStoreShape
}

/** Our McpServer on our HTTP server transport, for the lifetime of the scope. */
export const serve = (options: HttpServerTransport.Options = {}): Effect.Effect<Server, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const probe: Probe = {
      slowStarted: yield* Deferred.make<JsonRpc.RequestId>(),
      slowInterrupted: yield* Deferred.make<JsonRpc.RequestId>()
    }
    const handle = yield* McpServer.toHandler(definition(probe, { stateless: options.mode === "stateless" }))
    const handler: Handler = (message, context) =>
      handle.handler(message, context).pipe(Effect.provideService(TransportCall, context))
    const eventStore = yield* EventStore.makeMemory()
    const services = yield* Layer.build(
      HttpServerTransport.layer(handler, { port: 0, sseRetry: "50 millis", eventStore, ...options })
    )
    const transport = Context.get(services, HttpServerTransport.HttpServerTransport)
    const address = Option.getOrThrow(transport.address)
    return {
      url: Option.getOrThrow(transport.url),
      base: `http://127.0.0.1:${address.port}`,
      transport,
      handle,
      probe,
      eventStore
    }
  })

export interface Exchange {
  readonly method: string
  readonly url: string
  readonly status: number
  readonly contentType: string
  readonly lastEventId: string | undefined
}

/** undici, with every answered exchange recorded in `log`. */
export const recordingHttpClient = (log: Array<Exchange>): Layer.Layer<HttpClient.HttpClient> =>
  Layer.effect(
    HttpClient.HttpClient,
    Effect.map(
      HttpClient.HttpClient,
      HttpClient.tap((response) =>
        Effect.sync(() =>
          void log.push({
            method: response.request.method,
            url: response.request.url,
            status: response.status,
            contentType: response.headers["content-type"] ?? "",
            lastEventId: response.request.headers["last-event-id"]
          })
        )
      )
    )
  ).pipe(Layer.provide(NodeHttpClient.layerUndici))

/** Polls `check` every few milliseconds, at most `times` times (for server-side effects of a disconnect). */
export const eventually = <A, E, R>(check: Effect.Effect<A, E, R>, ok: (a: A) => boolean, times = 400) =>
  Effect.gen(function*() {
    let last = yield* check
    for (let i = 0; i < times && !ok(last); i++) {
      yield* Effect.sleep("5 millis")
      last = yield* check
    }
    return last
  })
