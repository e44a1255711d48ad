// Type-level checks of the error groups, compiled by `tsc --noEmit`: a transport that cannot
// sign in leaves no authorization group in a call's error type; an HTTP transport keeps it.
import * as Effect from "effect/Effect"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"
import type * as McpErrorGroup from "../../src/McpErrorGroup.ts"
import type { Handler } from "../../src/server/Handler.ts"

declare const handler: Handler

const stdioCall = Effect.flatMap(
  McpClient.connect(StdioClientTransport.make({ command: "server" })),
  (client) => client.callTool({ name: "echo" })
)
const httpCall = Effect.flatMap(
  McpClient.connect(StreamableHttpClientTransport.make({ url: "http://127.0.0.1:1/mcp" })),
  (client) => client.callTool({ name: "echo" })
)
const inMemoryCall = Effect.flatMap(
  McpClient.connect(InMemoryTransport.make(handler)),
  (client) => client.callTool({ name: "echo" })
)

// Over stdio: the groups of transport, server and protocol, and nothing about signing in.
export const stdioHandled = stdioCall.pipe(
  Effect.catchTag("McpTransportError", (e) => Effect.succeed(e.reason._tag)),
  Effect.catchReason("McpServerError", "RpcError", (e) => Effect.succeed(e.code)),
  Effect.catchTag("McpProtocolError", (e) => Effect.succeed(e.message))
)
// @ts-expect-error a stdio client cannot fail to sign in
export const stdioAuth = stdioCall.pipe(Effect.catchTag("McpAuthError", () => Effect.void))
// @ts-expect-error nor can an in-memory one
export const inMemoryAuth = inMemoryCall.pipe(Effect.catchTag("McpAuthError", () => Effect.void))
export const stdioError: Effect.Effect<unknown, McpClient.McpClientError<never>, any> = stdioCall
// @ts-expect-error the full set is wider than what stdio can fail with
export const stdioHasAuth: Effect.Effect<unknown, McpErrorGroup.McpAuthError, any> = Effect.flip(stdioCall)

// Over HTTP: the authorization group is there, with every `AuthError` as a reason.
export const httpAuth = httpCall.pipe(
  Effect.catchReason("McpAuthError", "UserDenied", () => Effect.void),
  Effect.catchTag("McpAuthError", (e) => Effect.succeed(e.reason._tag))
)
export const httpError: Effect.Effect<unknown, McpClient.McpClientError, any> = httpCall
// @ts-expect-error an HTTP call may fail to sign in
export const httpWithoutAuth: Effect.Effect<unknown, McpClient.McpClientError<never>, any> = httpCall

// A reason that is not in its group is refused.
// @ts-expect-error RpcError is a reason of McpServerError, not of McpTransportError
export const wrongGroup = stdioCall.pipe(Effect.catchReason("McpTransportError", "RpcError", () => Effect.void))
