/**
 * A client transport with the method of every request it sends recorded in
 * order, so an interop test can see what went out before the handshake (the
 * era probe) without looking at the wire.
 */
import { Effect } from "effect"
import type * as ClientTransport from "../../src/client/ClientTransport.ts"

export const recorded = <E, R>(
  transport: Effect.Effect<ClientTransport.ClientTransportShape, E, R>,
  sent: Array<string>
) =>
  Effect.map(transport, (t): ClientTransport.ClientTransportShape => {
    const request: ClientTransport.ClientTransportShape["request"] = (method, params, options) =>
      Effect.suspend(() => {
        sent.push(method)
        return t.request(method, params, options)
      })
    // A proxy, not a copy: some transports' members are getters (FromConfig's `kind` follows its fallback).
    return new Proxy(t, { get: (target, key) => key === "request" ? request : Reflect.get(target, key, target) })
  })

/** The requests up to and including the first `initialize`: in `auto` against a handshake server, the probe and it. */
export const beforeHandshake = (sent: ReadonlyArray<string>): ReadonlyArray<string> =>
  sent.slice(0, sent.indexOf("initialize") + 1)
