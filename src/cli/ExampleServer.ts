/**
 * The example MCP server behind `effect-mcp-transport serve` and `npm start`: a few
 * small tools (one of them long-running, with progress and cancellation), two
 * resources, a prompt with completion, and logging, built on `McpServer` and
 * served on `StdioServerTransport` (`runStdio`) or `HttpServerTransport`
 * (`layerHttp`), in both protocol eras (the stateless 2026-07-28 and the
 * initialize handshake) unless `eras` restricts it.
 *
 * Test hook: when `EFFECT_MCP_EXAMPLE_EVENTS` names a file (or `events` is
 * given), one JSON line per event is appended to it, synchronously, so a test
 * can read what the server saw even after the process is gone:
 *
 *   {"event":"started","tool":"countdown","requestId":3,"pid":1234}
 *   {"event":"cancelled","tool":"countdown","requestId":3,"pid":1234}
 *   {"event":"completed","tool":"echo","requestId":4,"pid":1234}
 *   {"event":"listening","transport":"http","url":"http://127.0.0.1:8421/mcp","pid":1234}
 *   {"event":"stopped","transport":"stdio","pid":1234}
 *
 * `cancelled` means the tool's handler was interrupted before it finished:
 * the client's `notifications/cancelled`, or the server stopping mid-call.
 */
import { appendFileSync } from "node:fs"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Stdio from "effect/Stdio"
import type { HttpServer } from "effect/http"
import type { ServeError } from "effect/http/HttpServerError"
import type { TransportClosed } from "../McpError.ts"
import type * as HttpServerTransport from "../server/HttpServerTransport.ts"
import * as McpServer from "../server/McpServer.ts"
import * as Prompt from "../server/Prompt.ts"
import * as Resource from "../server/Resource.ts"
import * as StdioServerTransport from "../server/StdioServerTransport.ts"
import * as Tool from "../server/Tool.ts"
import * as Eras from "./Eras.ts"

export const EVENTS_ENV = "EFFECT_MCP_EXAMPLE_EVENTS"

export const SERVER_INFO = {
  name: "effect-mcp-example",
  title: "effect-mcp-transport example server",
  version: "0.1.0"
} as const

// ---------------------------------------------------------------------------
// The events file

export type ServerEvent =
  | { readonly event: "started" | "cancelled" | "completed"; readonly tool: string; readonly requestId: string | number }
  | { readonly event: "listening"; readonly transport: "stdio" | "http"; readonly url?: string | undefined }
  | { readonly event: "stopped"; readonly transport: "stdio" | "http" }

export interface ExampleServerOptions {
  /** File to append event lines to. Default: the `EFFECT_MCP_EXAMPLE_EVENTS` variable, read at each event. */
  readonly events?: string | undefined
  /**
   * Which protocol eras to serve, on every transport: `both` (the stateless
   * era 2026-07-28 next to the initialize handshake), `modern` or `legacy`.
   * Default `both`.
   */
  readonly eras?: Eras.Eras | undefined
  /** Keys that sign and check `requestState`, current first (`McpServer`'s `requestStateKeys`). */
  readonly requestStateKeys?: ReadonlyArray<string> | undefined
}

const eventsFile = (options: ExampleServerOptions): string | undefined => {
  const file = options.events ?? process.env[EVENTS_ENV]
  return file === undefined || file === "" ? undefined : file
}

/** Appends one line; a hook that cannot write must not break the server. */
export const recordEvent = (options: ExampleServerOptions, event: ServerEvent): Effect.Effect<void> =>
  Effect.sync(() => {
    const file = eventsFile(options)
    if (file === undefined) return
    try {
      appendFileSync(file, JSON.stringify({ ...event, pid: process.pid }) + "\n")
    } catch {
      // ignored on purpose
    }
  })

// ---------------------------------------------------------------------------
// Tools

const text = (t: string) => ({ type: "text", text: t })

export const COUNTDOWN_DEFAULT_STEPS = 5
export const COUNTDOWN_DEFAULT_INTERVAL_MS = 200

export const toolNames: ReadonlyArray<string> = ["echo", "add", "countdown"]

/** A tool's run, recorded: started, then completed or cancelled. */
const recorded = <A, E>(options: ExampleServerOptions, tool: string, ctx: McpServer.RequestContext, run: Effect.Effect<A, E>) => {
  const base = { tool, requestId: ctx.requestId }
  return recordEvent(options, { event: "started", ...base }).pipe(
    Effect.andThen(run),
    Effect.onExit((exit) =>
      recordEvent(options, {
        event: Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? "cancelled" : "completed",
        ...base
      })
    )
  )
}

const tools = (options: ExampleServerOptions) => <R>(server: McpServer.McpServer<R>) =>
  server.pipe(
    Tool.add("echo", {
      title: "Echo",
      description: "Returns the text it was given.",
      parameters: { text: Schema.String }
    }, (a, ctx) => recorded(options, "echo", ctx, Effect.succeed(a.text))),
    Tool.add("add", {
      title: "Add",
      description: "Adds two numbers.",
      parameters: { a: Schema.Number, b: Schema.Number },
      success: Schema.Struct({ sum: Schema.Number }),
      text: ({ sum }) => String(sum)
    }, ({ a, b }, ctx) => recorded(options, "add", ctx, Effect.succeed({ sum: a + b }))),
    Tool.add("countdown", {
      title: "Countdown",
      description: "Counts down, one step every intervalMs, reporting progress at each step. Cancellable.",
      parameters: {
        steps: Schema.optionalKey(
          Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1000 })).annotate({ default: COUNTDOWN_DEFAULT_STEPS })
        ),
        intervalMs: Schema.optionalKey(
          Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 60_000 })).annotate({ default: COUNTDOWN_DEFAULT_INTERVAL_MS })
        )
      }
    }, (a, ctx) =>
      recorded(options, "countdown", ctx, Effect.gen(function*() {
        const steps = a.steps ?? COUNTDOWN_DEFAULT_STEPS
        const interval = a.intervalMs ?? COUNTDOWN_DEFAULT_INTERVAL_MS
        yield* ctx.log("debug", `countdown of ${steps} steps, one every ${interval} ms`, "countdown")
        for (let i = 1; i <= steps; i++) {
          yield* Effect.sleep(interval)
          yield* ctx.progress(i, { total: steps, message: `step ${i} of ${steps}, ${steps - i} to go` })
        }
        return `countdown finished after ${steps} steps`
      }).pipe(
        // A tool that fails reports it in the result (isError), not as a protocol error.
        Effect.catch((e) => Effect.succeed({ isError: true, content: [text(`countdown failed: ${String(e)}`)] }))
      )))
  )

// ---------------------------------------------------------------------------
// Resources and prompts

const README = `# effect-mcp-transport example server

Tools: echo {text}, add {a, b}, countdown {steps?, intervalMs?} (progress, cancellable).
Resources: example://readme (this text), example://server-info (JSON).
Prompts: greet {name}.
`

const startedAt = Date.now()

const names = ["Ada", "Alan", "Barbara", "Grace", "Edsger"]

const resourcesAndPrompts = <R>(server: McpServer.McpServer<R>) =>
  server.pipe(
    Resource.add("example://readme", {
      name: "readme",
      title: "README",
      description: "What this server offers",
      mimeType: "text/markdown"
    }, () => Effect.succeed(README)),
    Resource.add("example://server-info", {
      name: "server-info",
      title: "Server info",
      description: "Process id, uptime and tools, as JSON",
      mimeType: "application/json"
    }, () =>
      Effect.sync(() =>
        JSON.stringify({ ...SERVER_INFO, pid: process.pid, uptimeMs: Date.now() - startedAt, tools: toolNames })
      )),
    Prompt.add("greet", {
      title: "Greet",
      description: "Asks the model to greet someone",
      arguments: { name: Schema.String.annotate({ description: "Who to greet" }) },
      complete: { name: (typed) => Effect.succeed(names.filter((n) => n.toLowerCase().startsWith(typed.toLowerCase()))) }
    }, ({ name }) =>
      Effect.succeed({
        description: `A greeting for ${name}`,
        messages: [{ role: "user", content: text(`Please greet ${name} warmly, in one sentence.`) }]
      }))
  )

// ---------------------------------------------------------------------------
// The server

/** The example server's definition; mount it with `McpServer.toHandler`. */
export const make = (options: ExampleServerOptions = {}): McpServer.McpServer =>
  McpServer.make({
    serverInfo: SERVER_INFO,
    stateless: Eras.servesModern(options.eras ?? Eras.DEFAULT),
    ...(options.requestStateKeys === undefined ? {} : { requestStateKeys: options.requestStateKeys }),
    instructions: "An example server: echo, add and countdown (progress, cancellable) tools, a README resource and a greet prompt."
  }).pipe(tools(options), resourcesAndPrompts)

/** The example server, recording events to the file named by `EFFECT_MCP_EXAMPLE_EVENTS` when set. */
export const server: McpServer.McpServer = make()

// ---------------------------------------------------------------------------
// Serving it

/**
 * Serves the example server on stdin/stdout until stdin ends (replies in
 * flight written), then completes. Nothing but frames reaches stdout.
 */
export const runStdio = (
  options: ExampleServerOptions & StdioServerTransport.StdioServerOptions = {}
): Effect.Effect<TransportClosed, StdioServerTransport.StdioAlreadyServing, Stdio.Stdio> =>
  Effect.gen(function*() {
    const handle = yield* McpServer.toHandler(make(options))
    // Over HTTP the transport's `eras` keeps the handshake out; a stream has no such layer.
    const handler = options.eras === "modern" ? Eras.modernOnly(handle.handler) : handle.handler
    yield* recordEvent(options, { event: "listening", transport: "stdio" })
    return yield* StdioServerTransport.run(handler, options)
  }).pipe(Effect.scoped, Effect.ensuring(recordEvent(options, { event: "stopped", transport: "stdio" })))

export interface HttpOptions extends ExampleServerOptions, HttpServerTransport.Options {}

/**
 * The example server on Streamable HTTP (plus the legacy SSE endpoints and
 * the broadcast `/mcp/events` and `/mcp/health`), bound to `host` (default
 * 127.0.0.1) and `port` (default 8421, 0 for a free one). The bound URL is
 * on `HttpServerTransport.url` and in the events file.
 */
export const layerHttp = (
  options: HttpOptions = {}
): Layer.Layer<HttpServerTransport.HttpServerTransport | HttpServer.HttpServer, ServeError> =>
  Layer.unwrap(Effect.gen(function*() {
    // Loaded on demand: a stdio server (npm start's child) should not pay for the HTTP stack at startup.
    const Http = yield* Effect.promise(() => import("../server/HttpServerTransport.ts"))
    const handle = yield* McpServer.toHandler(make(options))
    // Added before the server is built, so it runs after the server closed (calls interrupted, sessions ended).
    yield* Effect.addFinalizer(() => recordEvent(options, { event: "stopped", transport: "http" }))
    const announce = Layer.effectDiscard(Effect.flatMap(Http.HttpServerTransport, (transport) =>
      recordEvent(options, { event: "listening", transport: "http", url: Option.getOrUndefined(transport.url) })))
    return announce.pipe(
      Layer.provideMerge(
        Http.layer(handle.handler, {
          ...options,
          host: options.host ?? "127.0.0.1",
          eras: options.eras ?? Eras.DEFAULT
        })
      )
    )
  }))
