/**
 * The contexts a `McpServer` handler receives, as built for each message:
 * the session's (its `SessionState` slots, notifications, principal) and
 * the request's (progress, log messages at the client's level, and asks to
 * the client: requests in the handshake era, `input_required` rounds in the
 * stateless one), with the per-session record they read.
 */
import type * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import type * as McpSchema from "effect/ai/McpSchema"
import type * as JsonRpc from "../../JsonRpc.ts"
import { CapabilityNotSupported, ClientRequestUnavailable, InvalidPayload } from "../../McpError.ts"
import type * as ProtocolVersion from "../../ProtocolVersion.ts"
import type { Implementation } from "../../Implementation.ts"
import type { HandlerContext } from "../Handler.ts"
import type { ClientCallError, RequestContext, SessionContext, SessionInfo } from "../RequestContext.ts"
import type { Rounds } from "./Rounds.ts"
import * as SessionStore from "./SessionStore.ts"
import { isRecord } from "../../internal/Records.ts"

export const LEVELS = [
  "debug",
  "info",
  "notice",
  "warning",
  "error",
  "critical",
  "alert",
  "emergency"
] as const satisfies ReadonlyArray<McpSchema.LoggingLevel>
/**
 * The schemas of the results a client sends back (sampling, elicitation,
 * roots) come from `effect/ai/McpSchema`, which holds every MCP schema and
 * weighs ~7 MiB of memory once loaded: it is loaded when a server first asks
 * a client for something, not when the server starts.
 */
let mcpSchema: Promise<typeof McpSchema> | undefined
const loadMcpSchema = Effect.promise(() => mcpSchema ??= import("effect/ai/McpSchema"))
const lazyDecoder = <A>(pick: (schemas: typeof McpSchema) => Schema.Decoder<A>) => {
  let decode: ((u: unknown) => Effect.Effect<A, Schema.SchemaError>) | undefined
  return (u: unknown): Effect.Effect<A, Schema.SchemaError> =>
    decode !== undefined
      ? decode(u)
      : Effect.flatMap(loadMcpSchema, (schemas) => (decode ??= Schema.decodeUnknownEffect(pick(schemas)))(u))
}
export const decodeSampling = lazyDecoder((m) => m.CreateMessageResult)
export const decodeElicit = lazyDecoder((m) => m.ElicitResult)
export const decodeRoots = lazyDecoder((m) => m.ListRootsResult)
const severity = (level: McpSchema.LoggingLevel): number => LEVELS.indexOf(level)
export const isLevel = (level: string): level is McpSchema.LoggingLevel => (LEVELS as ReadonlyArray<string>).includes(level)


/** A session's record: where it stands, what the client said, its level. */
export interface Session {
  phase: "initializing" | "ready"
  readonly era: ProtocolVersion.Era
  protocolVersion: ProtocolVersion.AnyVersion
  clientInfo: Implementation
  clientCapabilities: Readonly<Record<string, unknown>>
  logLevel: McpSchema.LoggingLevel | undefined
  /** The session-level channel (not tied to a request), known once the client is initialized. */
  channel: HandlerContext | undefined
  /** Completed by `notifications/initialized`. */
  readonly initialized: Deferred.Deferred<void>
}

export const sessionKey = (id: string | undefined) => id ?? ""

/** The `SessionState` slots of every live session, by session key. */
export interface Stores {
  readonly forSession: (key: string) => SessionStore.SessionStore
}

export const info = (sessionId: string | undefined, s: Session): SessionInfo => ({
  sessionId,
  phase: s.phase,
  era: s.era,
  protocolVersion: s.protocolVersion,
  clientInfo: s.clientInfo,
  clientCapabilities: s.clientCapabilities,
  logLevel: s.logLevel
})

const progressTokenOf = (params: unknown): string | number | undefined => {
  if (!isRecord(params) || !isRecord(params._meta)) return undefined
  const token = params._meta.progressToken
  return typeof token === "string" || typeof token === "number" ? token : undefined
}

const invalidResult = (method: string) => (e: Schema.SchemaError) =>
  new InvalidPayload({ method, kind: "result", reason: e.message })

/**
 * Contexts are built for every message. `session` is a live view (the phase
 * and log level change), so it is a getter, defined once on this prototype:
 * an object literal with a getter costs V8 a fresh object shape each time,
 * which measured about half of McpServer's own time per request.
 */
export class LiveSessionContext implements SessionContext {
  readonly sessionId: string | undefined
  protected readonly hctx: HandlerContext
  protected readonly state: Session
  readonly #stores: Stores
  /** The slots of a message with no session behind it, made on first use. */
  #scratch: SessionStore.SessionStore | undefined
  constructor(hctx: HandlerContext, state: Session, stores: Stores) {
    this.sessionId = hctx.sessionId
    this.hctx = hctx
    this.state = state
    this.#stores = stores
  }
  get sessionState(): SessionContext["sessionState"] {
    return (slot) =>
      Effect.suspend(() => {
        if (!this.hasSession) return (this.#scratch ??= SessionStore.make()).get(slot)
        return this.#stores.forSession(sessionKey(this.sessionId)).get(slot)
      })
  }
  /** The slot stores, for a context made from this one (a task's). */
  protected get slotStores(): Stores {
    return this.#stores
  }
  private get hasSession(): boolean {
    return this.hctx.ephemeral !== true && this.state.era !== "modern"
  }
  /** Ends the message's own slots (if it made any) with it. */
  releasing<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> {
    // No finalizer to run (most messages make no slots): the exit goes on without a step of its own.
    // A message answered already (an `Exit`) that made no slots has nothing to end either.
    return this.hasSession || (Exit.isExit(effect) && this.#scratch === undefined)
      ? effect
      : Effect.onExitPrimitive(effect, () => this.#scratch?.close)
  }
  // Read when used: the transport's context makes it on first use too.
  get notify(): HandlerContext["notify"] {
    return this.hctx.notify
  }
  get session(): SessionInfo {
    return info(this.sessionId, this.state)
  }
  get principal(): HandlerContext["principal"] {
    return this.hctx.principal
  }
  get auth(): HandlerContext["auth"] {
    return this.hctx.auth
  }
}

/**
 * Servers of the stateless era never start requests. Outside the methods
 * that may answer `input_required`, an ask fails at once rather than wait
 * for an answer that cannot come.
 */
export const statelessAsk = (method: string) =>
  new ClientRequestUnavailable({
    method,
    reason: "the request being served is of the stateless era (2026-07-28) and cannot answer input_required"
  })

/**
 * A sessionless HTTP POST of the handshake era is served on its own: the
 * client's answer would come in another POST, which nothing routes back.
 */
export const sessionlessAsk = (method: string) =>
  new ClientRequestUnavailable({
    method,
    reason: "the request being served came in an HTTP POST without a session, which no answer can reach"
  })

/** What an `input_required` result may ask for. */
const INPUT_METHODS: ReadonlySet<string> = new Set(["sampling/createMessage", "elicitation/create", "roots/list"])

const succeedRaw = (raw: unknown) => Effect.succeed(raw)

const clientHas = (session: Session, path: ReadonlyArray<string>): boolean => {
  let node: unknown = session.clientCapabilities
  for (const key of path) {
    if (!isRecord(node) || node[key] === undefined) return false
    node = node[key]
  }
  return true
}

/**
 * A request's context. Most handlers use few of its capabilities (many use
 * none), and thousands of requests may be in flight at once, so each
 * capability is made on first use, bound to its request: destructuring
 * (`(params, { progress, log }) => …`) works as with plain properties.
 */
export class LiveRequestContext extends LiveSessionContext implements RequestContext {
  readonly requestId: JsonRpc.RequestId
  readonly progressToken: string | number | undefined
  readonly #timeoutMs: number
  readonly #rounds: Pick<Rounds, "ask"> | undefined
  // The capabilities made so far (most requests make none).
  #made: { -readonly [K in "progress" | "log" | "sample" | "elicit" | "listRoots"]?: RequestContext[K] } | undefined

  constructor(
    request: JsonRpc.JsonRpcRequest,
    hctx: HandlerContext,
    state: Session,
    stores: Stores,
    timeoutMs: number,
    rounds?: Pick<Rounds, "ask"> | undefined
  ) {
    super(hctx, state, stores)
    this.requestId = request.id
    this.progressToken = progressTokenOf(request.params)
    this.#timeoutMs = timeoutMs
    this.#rounds = rounds
  }

  get request(): HandlerContext["request"] {
    if (this.hctx.ephemeral === true) return (method) => Effect.fail(sessionlessAsk(method))
    if (this.state.era !== "modern") return this.hctx.request
    const rounds = this.#rounds
    return (method, params) =>
      rounds !== undefined && INPUT_METHODS.has(method) ? rounds.ask(method, params, succeedRaw) : Effect.fail(statelessAsk(method))
  }

  /**
   * The context of this request's handler run as a task: detached from the
   * request (its stream may be gone), its asks going through `asker` (the
   * task's `inputRequests`), its progress through `status` (the task's
   * `statusMessage`), no log messages (the spec sends none for tasks).
   */
  forTask(asker: Pick<Rounds, "ask">, status: (message: string) => Effect.Effect<void>): RequestContext {
    const detached: HandlerContext = {
      sessionId: this.hctx.sessionId,
      requestId: this.hctx.requestId,
      principal: this.hctx.principal,
      auth: this.hctx.auth,
      notify: () => Effect.void,
      request: (method) => Effect.fail(statelessAsk(method))
    }
    const request = { jsonrpc: "2.0", id: this.requestId, method: "tools/call" } as JsonRpc.JsonRpcRequest
    return new TaskRequestContext(request, detached, { ...this.state, era: "modern" }, this.slotStores, this.#timeoutMs, asker, status)
  }

  #callClient<A>(
    method: string,
    capability: ReadonlyArray<string>,
    params: unknown,
    decode: (u: unknown) => Effect.Effect<A, Schema.SchemaError>
  ): Effect.Effect<A, ClientCallError> {
    // Checked first: the capabilities this client declared at its own initialize are unknown here.
    if (this.hctx.ephemeral === true) return Effect.fail(sessionlessAsk(method))
    if (!clientHas(this.state, capability)) {
      return Effect.fail(new CapabilityNotSupported({ method, capability: capability.join("."), peer: "client" }))
    }
    if (this.state.era !== "modern") {
      return Effect.flatMap(
        this.hctx.request(method, params, { timeout: this.#timeoutMs }),
        (raw) => Effect.mapError(decode(raw), invalidResult(method))
      )
    }
    // A malformed answer is the client's mistake, answered for the request as a whole (see serveRounds).
    return this.#rounds !== undefined ? this.#rounds.ask(method, params, decode) : Effect.fail(statelessAsk(method))
  }

  get progress(): RequestContext["progress"] {
    return (this.#made ??= {}).progress ??= (progress, o) => {
      const token = this.progressToken
      if (token === undefined) return Effect.void
      const params: Record<string, unknown> = { progressToken: token, progress }
      if (o?.total !== undefined) params.total = o.total
      if (o?.message !== undefined) params.message = o.message
      return Effect.ignore(this.hctx.notify("notifications/progress", params))
    }
  }

  get log(): RequestContext["log"] {
    return (this.#made ??= {}).log ??= (level, data, logger) => {
      const threshold = this.state.logLevel
      // The stateless era sends no log messages unless the request asked for them.
      if (threshold === undefined ? this.state.era === "modern" : severity(level) < severity(threshold)) {
        return Effect.void
      }
      return Effect.ignore(
        this.hctx.notify("notifications/message", logger === undefined ? { level, data } : { level, logger, data })
      )
    }
  }

  get sample(): RequestContext["sample"] {
    return (this.#made ??= {}).sample ??= (params) => this.#callClient("sampling/createMessage", ["sampling"], params, decodeSampling)
  }

  get elicit(): RequestContext["elicit"] {
    return (this.#made ??= {}).elicit ??= (params) =>
      this.#callClient(
        "elicitation/create",
        params.mode === "url" ? ["elicitation", "url"] : ["elicitation"],
        params,
        decodeElicit
      )
  }

  get listRoots(): RequestContext["listRoots"] {
    return (this.#made ??= {}).listRoots ??= Effect.suspend(() =>
      Effect.map(this.#callClient("roots/list", ["roots"], {}, decodeRoots), (r) => r.roots)
    )
  }
}

/** A handler's context inside a task (see `LiveRequestContext.forTask`). */
class TaskRequestContext extends LiveRequestContext {
  readonly #status: (message: string) => Effect.Effect<void>
  constructor(
    request: JsonRpc.JsonRpcRequest,
    hctx: HandlerContext,
    state: Session,
    stores: Stores,
    timeoutMs: number,
    asker: Pick<Rounds, "ask">,
    status: (message: string) => Effect.Effect<void>
  ) {
    super(request, hctx, state, stores, timeoutMs, asker)
    this.#status = status
  }
  override get progress(): RequestContext["progress"] {
    return (progress, o) =>
      this.#status(o?.message ?? (o?.total === undefined ? `${progress}` : `${progress}/${o.total}`))
  }
  override get log(): RequestContext["log"] {
    return () => Effect.void
  }
}
