/**
 * Where the runtime's metrics are recorded, and under which transport: the
 * switch (`Enabled`, off unless an exporter turns it on) and the
 * `network.transport` of the current fiber. Re-exported by `Metrics`.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as NetworkPeer from "../../internal/NetworkPeer.ts"

/**
 * Whether the runtime records its metrics in the current fiber. Default
 * false: with no exporter to read them, recording would be work for nothing.
 * The HTTP server transport's `metrics` option turns it on for its server;
 * an application exporting with OTLP (or reading `Metric.snapshot`)
 * provides `layerEnabled` to the transports and clients it builds.
 *
 * @since 0.1.0
 * @category services
 */
export const Enabled = Context.Reference<boolean>("effect-mcp-transport/observability/Metrics/Enabled", {
  defaultValue: () => false
})

/**
 * Turns the runtime's metrics on for everything built with this layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerEnabled: Layer.Layer<never> = Layer.succeed(Enabled, true)

/**
 * Turns the runtime's metrics on for an effect (and the transports, servers
 * and clients it builds).
 *
 * @since 0.1.0
 * @category utils
 */
export const enabled = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.provideService(effect, Enabled, true)

/** Runs `record` only where metrics are on. */
export const whenEnabled = (record: Effect.Effect<void>): Effect.Effect<void> =>
  Effect.withFiber((fiber) => fiber.getRef(Enabled) ? record : Effect.void)

/**
 * `network.transport` as the conventions name it: `pipe` for stdio, `tcp`
 * for HTTP. Undefined (not recorded) for the in-memory pair.
 *
 * @since 0.1.0
 * @category models
 */
export type NetworkTransport = NetworkPeer.NetworkTransport

/**
 * Provides the `network.transport` of the server transport serving an
 * effect (a server transport's session, so that its handler's fibers
 * inherit it). The server's spans read the same peer.
 *
 * @since 0.1.0
 * @category utils
 */
export const withNetworkTransport = (transport: NetworkTransport) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provideService(effect, NetworkPeer.CurrentPeer, NetworkPeer.ofTransport(transport))

/** The `network.transport` the current server transport provided, if any. */
export const currentTransport = (fiber: Fiber.Fiber<unknown, unknown>): NetworkTransport | undefined =>
  fiber.getRef(NetworkPeer.CurrentPeer)?.transport

/**
 * A server transport's services for its handler: its `network.transport`,
 * and metrics turned on when it serves a scrape endpoint (`scraped`).
 *
 * @since 0.1.0
 * @category utils
 */
export const servicesOf = <R>(services: Context.Context<R>, transport: NetworkTransport, scraped: boolean): Context.Context<R> => {
  const withTransport = Context.add(services, NetworkPeer.CurrentPeer, NetworkPeer.ofTransport(transport))
  return scraped ? Context.add(withTransport, Enabled, true) : withTransport
}

/**
 * The `network.transport` of a client transport's `kind`.
 *
 * @since 0.1.0
 * @category utils
 */
export const networkTransportOf = (kind: string): NetworkTransport | undefined =>
  kind === "stdio" ? "pipe" : kind === "streamable-http" || kind === "sse" ? "tcp" : undefined
