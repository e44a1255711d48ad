/**
 * How `McpClient` sets up a session: which era to speak, and the exchange
 * that era begins with.
 *
 * The era is pinned by `protocol`, remembered for the server (`eraKey`, in
 * the era cache), or decided by a probe: `server/discover` at the newest
 * stateless revision, classified by `Negotiation` (a stateless answer, a
 * refusal naming a version we speak, or what a handshake server says). A
 * handshake server then gets `initialize` and `notifications/initialized`;
 * a stateless one is described by its discovery. A probe that got no
 * answer in `probeTimeout` counts as a handshake server, unless that server
 * refuses the handshake with an answer: it was a stateless server slow to
 * start, and is probed again with the whole request timeout. A remembered
 * handshake verdict that the server now refuses is forgotten and probed
 * again.
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type * as McpSchema from "effect/ai/McpSchema"
import type { Implementation } from "../../Implementation.ts"
import {
  type InvalidPayload,
  type RequestError,
  RequestTimeout,
  RpcError,
  UnsupportedProtocolVersion
} from "../../McpError.ts"
import * as ProtocolVersion from "../../ProtocolVersion.ts"
import * as RequestMeta from "../../RequestMeta.ts"
import type { ClientTransportShape } from "../ClientTransport.ts"
import * as Negotiation from "../Negotiation.ts"
import type { McpClientOptions } from "./ClientOptions.ts"
import * as ClientSpans from "./ClientSpans.ts"
import * as LazySchemas from "./LazySchemas.ts"
import type * as ClientSchemas from "./McpClientSchemas.ts"
import * as ModernCalls from "./ModernCalls.ts"
import * as ServerRequests from "./ServerRequests.ts"
import * as TaskResults from "./TaskResults.ts"

/** The handshake's failures inside the client, before they are grouped. */
export type FlatHandshakeError = RequestError | UnsupportedProtocolVersion | InvalidPayload | ModernCalls.ModernError

/** What we declare: the caller's extra capabilities, those the handlers imply, and the tasks extension. */
export const declaredCapabilities = (options: McpClientOptions): Record<string, unknown> => {
  const declared = { ...options.capabilities, ...ServerRequests.impliedCapabilities(options.handlers ?? {}) }
  return options.tasks === false ? declared : TaskResults.declare(declared)
}

/** A session set up: its era, what the server said, and the client's Schemas (loaded by then). */
export interface Established {
  readonly era: ProtocolVersion.Era
  /** Stateless era: the `server/discover` result the session starts from (`undefined` in the handshake era). */
  readonly discovered: unknown
  readonly init: McpSchema.InitializeResult
  readonly version: ProtocolVersion.AnyVersion
  readonly schemas: typeof ClientSchemas
}

/** What the set-up needs from the client being built. */
export interface Setup {
  readonly transport: ClientTransportShape
  readonly options: McpClientOptions
  readonly requestTimeout: Duration.Duration
  readonly capabilities: Record<string, unknown>
  readonly clientInfo: Implementation
  /** Told the notification decoder as soon as the Schemas have loaded. */
  readonly onSchemas: (decode: typeof ClientSchemas.decodeNotification) => void
}

/**
 * Decides the era and sets the session up in it, under one `connect` span,
 * and remembers the verdict under `eraKey` when the era was not pinned.
 */
export const establish = Effect.fnUntraced(function*(
  { capabilities, clientInfo, onSchemas, options, requestTimeout, transport }: Setup
): Effect.fn.Return<Established, FlatHandshakeError> {
  // --- the era: a pinned revision, a cached verdict, or the probe
  const requested = options.protocolVersion ??
    (options.protocol !== undefined && ProtocolVersion.isSupported(options.protocol) ? options.protocol : ProtocolVersion.LATEST)
  const protocol = options.protocol ?? "auto"
  const overHttp = transport.kind === "streamable-http"
  const eraCache = options.eraCache ?? (yield* Negotiation.CurrentEraCache)
  const cached = protocol === "auto" && options.eraKey !== undefined
    ? Negotiation.get(eraCache, options.eraKey)
    : undefined
  // The HTTP+SSE transport belongs to the handshake era: nothing to probe there.
  const initialEra: ProtocolVersion.Era | "auto" = protocol === "auto"
    ? transport.kind === "sse" ? "legacy" : cached?.era ?? "auto"
    : ProtocolVersion.eraOf(protocol)
  let statelessVersion: string = protocol !== "auto" && ProtocolVersion.isStateless(protocol)
    ? protocol
    : cached?.era === "modern"
    ? cached.version
    : ProtocolVersion.LATEST_STATELESS

  /**
   * `server/discover` with our metadata: the probe, and the stateless era's
   * liveness check. The Schemas start loading once it is on its way (both
   * eras need them next), while the server starts and answers.
   */
  const discover = (version: string, timeout: Duration.Input) =>
    Effect.andThen(
      transportVersion(version),
      Effect.flatMap(
        Effect.forkChild(
          transport.request(
            "server/discover",
            { _meta: RequestMeta.requestMeta({ protocolVersion: version, clientCapabilities: capabilities, clientInfo }) },
            { timeout }
          ),
          { startImmediately: true }
        ),
        (probing) => Effect.andThen(LazySchemas.preload, Fiber.join(probing))
      )
    )
  // The transport's mode follows the version it is told (HTTP sends headers by it).
  let lastTransportVersion: string | undefined
  const transportVersion = (version: string): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (version === lastTransportVersion) return Effect.void
      lastTransportVersion = version
      return transport.setProtocolVersion(version)
    })

  const probeTimeout = options.probeTimeout ?? (transport.kind === "streamable-http" ? requestTimeout : Duration.seconds(5))
  /**
   * Runs the probe (once more after a `-32022` that names a version we
   * speak) and returns the verdict, or the probe's own failure when there is
   * nothing to fall back to (401/403, 5xx, no answer over HTTP, a dead process).
   */
  const probe = (
    pinned: boolean,
    timeout: Duration.Input = pinned ? requestTimeout : probeTimeout
  ): Effect.Effect<{ verdict: Negotiation.Verdict; timedOut: boolean }, FlatHandshakeError> =>
    Effect.gen(function*() {
      let version = statelessVersion
      for (let attempt = 0;; attempt++) {
        const exit = yield* Effect.exit(discover(version, timeout))
        if (Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)) return yield* Effect.failCause(exit.cause)
        const verdict = Negotiation.classify({
          transport: overHttp ? "http" : "stdio",
          requested: version,
          outcome: Negotiation.outcomeOf(exit)
        })
        if (verdict._tag === "RetryModern" && attempt === 0) {
          version = verdict.version
          continue
        }
        const failed = verdict._tag === "Fail" || verdict._tag === "RetryModern" || (pinned && verdict._tag === "Legacy")
        if (failed && Exit.isFailure(exit)) {
          const error = Cause.squash(exit.cause)
          return yield* Effect.fail((ModernCalls.typedError("server/discover", error) ?? error) as FlatHandshakeError)
        }
        const timedOut = Exit.isFailure(exit) && Cause.squash(exit.cause) instanceof RequestTimeout
        return { verdict, timedOut }
      }
    })

  /** The probe's verdict as the era to speak, or the failure to report. */
  const decide = (timeout?: Duration.Input) => Effect.gen(function*() {
    const { timedOut, verdict } = yield* probe(initialEra === "modern" && protocol !== "auto", timeout)
    switch (verdict._tag) {
      case "Modern":
        statelessVersion = verdict.version
        return { era: "modern" as const, discovered: verdict.discover, timedOut }
      case "Legacy":
        return { era: "legacy" as const, discovered: undefined, timedOut }
      default: {
        if (verdict._tag === "Fail" && verdict.error instanceof UnsupportedProtocolVersion) return yield* verdict.error
        return yield* new UnsupportedProtocolVersion({ requested: statelessVersion, supported: ProtocolVersion.ALL })
      }
    }
  })

  const handshake = Effect.gen(function*() {
    // After a probe the transport is in the stateless mode: back to the handshake's.
    if (lastTransportVersion !== undefined) yield* transportVersion(requested)
    // `initialize` is on its way before the Schemas start loading, so the
    // import runs while the server starts and answers.
    const initializing = yield* transport.request(
      "initialize",
      { protocolVersion: requested, capabilities, clientInfo },
      { timeout: options.initializeTimeout ?? requestTimeout }
    ).pipe(Effect.forkChild({ startImmediately: true }))
    const schemas = yield* LazySchemas.load()
    const raw = yield* Fiber.join(initializing)
    onSchemas(schemas.decodeNotification)
    const init = yield* schemas.decodeInitialize(raw)
    if (!ProtocolVersion.isSupported(init.protocolVersion)) {
      return yield* new UnsupportedProtocolVersion({
        requested,
        received: init.protocolVersion,
        supported: ProtocolVersion.SUPPORTED
      })
    }
    const version: ProtocolVersion.AnyVersion = init.protocolVersion
    yield* transport.setProtocolVersion(version)
    yield* transport.notify("notifications/initialized")
    return { init, version, schemas }
  })

  const stateless = (discovered: unknown) =>
    Effect.gen(function*() {
      const schemas = yield* LazySchemas.load()
      onSchemas(schemas.decodeNotification)
      const d = (discovered ?? {}) as Record<string, unknown>
      const meta = (d._meta ?? {}) as Record<string, unknown>
      const init = yield* schemas.decodeInitialize({
        protocolVersion: statelessVersion,
        capabilities: d.capabilities ?? {},
        serverInfo: meta[RequestMeta.MetaKey.serverInfo] ?? { name: "", version: "" },
        ...(typeof d.instructions === "string" ? { instructions: d.instructions } : {})
      })
      return { init, version: statelessVersion as ProtocolVersion.AnyVersion, schemas }
    })

  // The probe and the handshake under one `connect` span.
  const { discovered, established, era } = yield* ClientSpans.connecting(transport, Effect.gen(function*() {
    let era: ProtocolVersion.Era
    let discovered: unknown
    let established: { init: McpSchema.InitializeResult; version: ProtocolVersion.AnyVersion; schemas: typeof ClientSchemas }
    if (initialEra === "legacy") {
      era = "legacy"
      const attempt = yield* Effect.exit(handshake)
      // A remembered verdict that no longer holds (the server now refuses the
      // handshake with an answer) is forgotten, and the server probed again.
      const refusal = Exit.isFailure(attempt) && cached !== undefined ? Cause.squash(attempt.cause) : undefined
      if (
        Exit.isFailure(attempt) && cached !== undefined && typeof refusal === "object" && refusal !== null &&
        ["RpcError", "HttpError", "InvalidPayload"].includes((refusal as { _tag?: string })._tag ?? "")
      ) {
        Negotiation.invalidate(eraCache, options.eraKey!)
        const decided = yield* decide()
        era = decided.era
        discovered = decided.discovered
        established = era === "legacy" ? yield* handshake : yield* stateless(discovered)
      } else {
        established = yield* attempt
      }
    } else {
      let decided = yield* decide()
      if (decided.era === "legacy" && decided.timedOut) {
        // No answer in `probeTimeout` counts as a handshake server; a stateless
        // server that was only slow to start refuses the handshake with an
        // answer, and is then given the whole request timeout to answer the probe.
        const attempt = yield* Effect.exit(handshake)
        if (Exit.isSuccess(attempt)) {
          era = "legacy"
          established = attempt.value
        } else if (Cause.squash(attempt.cause) instanceof RpcError) {
          decided = yield* decide(requestTimeout)
          era = decided.era
          discovered = decided.discovered
          established = era === "legacy" ? yield* handshake : yield* stateless(discovered)
        } else {
          return yield* Effect.failCause(attempt.cause)
        }
      } else {
        era = decided.era
        discovered = decided.discovered
        established = era === "legacy" ? yield* handshake : yield* stateless(discovered)
      }
    }
    return { era, discovered, established }
  }))

  const { init, version, schemas } = established
  if (options.eraKey !== undefined && protocol === "auto") {
    Negotiation.set(eraCache, options.eraKey, { era, version })
  }
  return { era, discovered, init, version, schemas }
})
