/**
 * Who a server transport serves, read by both the server's spans and its
 * metrics (`network.transport` and the rest), so that a transport says it
 * once: `pipe` (stdio) or `tcp` (HTTP), and for HTTP the client's address,
 * the span to link and the revision its headers name.
 */
import * as Context from "effect/Context"
import type * as Tracer from "effect/Tracer"

/** `network.transport` as the conventions name it. */
export type NetworkTransport = "pipe" | "tcp"

export interface Peer {
  readonly transport: NetworkTransport
  readonly protocol?: "http" | undefined
  readonly address?: string | undefined
  readonly link?: Tracer.AnySpan | undefined
  /** The revision the transport knows the request is of (an HTTP request's `MCP-Protocol-Version`). */
  readonly protocolVersion?: string | undefined
}

/** The peer of the requests served in this context; undefined for the in-memory pair. */
export const CurrentPeer = Context.Reference<Peer | undefined>("effect-mcp-transport/NetworkPeer/CurrentPeer", {
  defaultValue: () => undefined
})

export const PIPE: Peer = { transport: "pipe" }
export const TCP: Peer = { transport: "tcp" }

/** The peer that only names its transport. */
export const ofTransport = (transport: NetworkTransport): Peer => transport === "pipe" ? PIPE : TCP
