/**
 * Which protocol eras the example server speaks (`serve --eras`): the
 * stateless era (2026-07-28), the handshake era (2024-11-05 … 2025-11-25),
 * or both at once, on stdio and on Streamable HTTP alike.
 */
import * as Effect from "effect/Effect"
import { Flag } from "effect/cli"
import * as JsonRpc from "../JsonRpc.ts"
import * as ProtocolVersion from "../ProtocolVersion.ts"
import * as RequestMeta from "../RequestMeta.ts"
import type { Handler } from "../server/Handler.ts"

export const ERAS = ["both", "modern", "legacy"] as const
export type Eras = typeof ERAS[number]
export const DEFAULT: Eras = "both"

/** Whether `McpServer` should serve the stateless era (`stateless`). */
export const servesModern = (eras: Eras): boolean => eras !== "legacy"

const MODERN = `stateless ${ProtocolVersion.STATELESS.join(", ")}`
const LEGACY = `handshake ${ProtocolVersion.SUPPORTED.at(-1)} to ${ProtocolVersion.LATEST}`

/** The eras in words: `stateless 2026-07-28 and handshake 2024-11-05 to 2025-11-25`. */
export const describe = (eras: Eras): string =>
  eras === "both" ? `${MODERN} and ${LEGACY}` : eras === "modern" ? `${MODERN} only` : `${LEGACY} only`

export const flag = Flag.Literals("eras", ERAS).pipe(
  Flag.withDescription(
    "Protocol eras to serve: both (the default), modern (2026-07-28 only, initialize refused) or legacy (the initialize handshake only)"
  ),
  Flag.withDefault(DEFAULT)
)

/**
 * The stateless era alone on a stream transport (stdio): what `McpServer`
 * would otherwise take as the start of a handshake-era connection is
 * refused. `initialize` gets -32022 listing the revisions served (the
 * revision's advice to a modern-only server); any other request without
 * the era's `_meta` gets -32602 naming the missing fields, as a stateless
 * request missing them does. Notifications pass (`notifications/cancelled`
 * is the era's way to cancel on stdio).
 */
export const modernOnly = <R>(handler: Handler<R>): Handler<R> => {
  const gate: Handler<R> = (message, ctx) => {
    if (!("id" in message)) return handler(message, ctx)
    if (message.method === "initialize") {
      const requested = (message.params as { protocolVersion?: unknown } | undefined)?.protocolVersion
      return Effect.succeed(JsonRpc.failure(
        message.id,
        JsonRpc.ErrorCode.UnsupportedProtocolVersion,
        "Unsupported protocol version: this server speaks only the stateless era, without the initialize handshake",
        { supported: [...ProtocolVersion.STATELESS], requested: requested ?? null }
      ))
    }
    if (RequestMeta.readMeta(message.params)._tag === "Absent") {
      const meta = (message.params as { _meta?: Record<string, unknown> } | undefined)?._meta
      const capabilities = meta?.[RequestMeta.MetaKey.clientCapabilities]
      const missing = [
        RequestMeta.MetaKey.protocolVersion,
        ...(typeof capabilities === "object" && capabilities !== null ? [] : [RequestMeta.MetaKey.clientCapabilities])
      ]
      return Effect.succeed(JsonRpc.failure(
        message.id,
        JsonRpc.ErrorCode.InvalidParams,
        `Missing or invalid _meta fields: ${missing.join(", ")}`,
        { missing }
      ))
    }
    return handler(message, ctx)
  }
  return Object.assign(gate, {
    shutdown: handler.shutdown,
    stateless: handler.stateless,
    toolInputSchema: handler.toolInputSchema
  })
}
