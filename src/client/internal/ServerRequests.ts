/**
 * The client's side of the requests a server sends it: the handler types
 * `McpClient` exposes (sampling, elicitation, roots, ping), the capabilities
 * they imply, and the transport request handler that dispatches to them and
 * turns their results into answers.
 */
import * as Effect from "effect/Effect"
import type * as McpSchema from "effect/ai/McpSchema"
import * as JsonRpc from "../../JsonRpc.ts"
import { RpcError } from "../../McpError.ts"
import type { RequestHandler } from "../ClientTransport.ts"
import * as LazySchemas from "./LazySchemas.ts"

/**
 * Parameters of `sampling/createMessage`, decoded.
 *
 * @since 0.1.0
 * @category models
 */
export type SamplingParams = typeof McpSchema.CreateMessage.payloadSchema.Type

/**
 * The answer to `sampling/createMessage`, in its wire (JSON) form.
 *
 * @since 0.1.0
 * @category models
 */
export type SamplingResult = typeof McpSchema.CreateMessageResult.Encoded

/**
 * Parameters of `elicitation/create` (form or URL mode), decoded leniently.
 *
 * @since 0.1.0
 * @category models
 */
export interface ElicitParams {
  readonly mode: "form" | "url"
  readonly message: string
  /** Form mode: the JSON Schema of the requested fields. */
  readonly requestedSchema?: Readonly<Record<string, unknown>> | undefined
  /** URL mode. */
  readonly url?: string | undefined
  readonly elicitationId?: string | undefined
  readonly _meta?: Readonly<Record<string, unknown>> | undefined
}

/**
 * The answer to `elicitation/create`: the user accepted (with the form's
 * content), declined, or cancelled.
 *
 * @since 0.1.0
 * @category models
 */
export type ElicitResult =
  | {
    readonly action: "accept"
    readonly content?: Readonly<Record<string, string | number | boolean | ReadonlyArray<string>>> | undefined
  }
  | { readonly action: "decline" | "cancel" }

/**
 * One root the client exposes to the server (`roots/list`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Root {
  readonly uri: string
  readonly name?: string | undefined
  readonly _meta?: Readonly<Record<string, unknown>> | undefined
}

/**
 * Answers for the requests a server may send. Each one present is advertised
 * in our capabilities; absent ones are not, and the server gets -32601.
 * Fail with `RpcError` to send a JSON-RPC error; interruption (the server
 * cancelled) sends nothing.
 *
 * @since 0.1.0
 * @category models
 * @example
 * ```ts
 * import * as Effect from "effect/Effect"
 * import type { ServerRequestHandlers } from "effect-mcp-transport/client/McpClient"
 *
 * const handlers: ServerRequestHandlers = {
 *   listRoots: () => Effect.succeed([{ uri: "file:///work", name: "work" }]),
 *   elicit: () => Effect.succeed({ action: "decline" })
 * }
 * ```
 */
export interface ServerRequestHandlers {
  readonly listRoots?: (() => Effect.Effect<ReadonlyArray<Root>, RpcError>) | undefined
  readonly createMessage?: ((params: SamplingParams) => Effect.Effect<SamplingResult, RpcError>) | undefined
  readonly elicit?: ((params: ElicitParams) => Effect.Effect<ElicitResult, RpcError>) | undefined
  /** Whether URL-mode elicitation is advertised too (default: form mode only). */
  readonly elicitUrlMode?: boolean | undefined
  /** Runs before we answer a server's `ping` (which is always answered). */
  readonly ping?: (() => Effect.Effect<void, RpcError>) | undefined
}

/** The client capabilities the present handlers imply (roots, sampling, elicitation). */
export const impliedCapabilities = (handlers: ServerRequestHandlers): Record<string, unknown> => {
  const capabilities: Record<string, unknown> = {}
  if (handlers.listRoots !== undefined) capabilities.roots = { listChanged: true }
  if (handlers.createMessage !== undefined) capabilities.sampling = {}
  if (handlers.elicit !== undefined) {
    capabilities.elicitation = handlers.elicitUrlMode === true ? { form: {}, url: {} } : { form: {} }
  }
  return capabilities
}

const methodNotFound = (method: string) =>
  new RpcError({ code: JsonRpc.ErrorCode.MethodNotFound, rpcMessage: "Method not found", data: { method }, method })

/** The transport's handler for server requests: each method to its handler, params decoded, -32601 without one. */
export const serve = (handlers: ServerRequestHandlers): RequestHandler => (request) => {
  switch (request.method) {
    case "ping":
      return handlers.ping === undefined ? Effect.succeed({}) : Effect.as(handlers.ping(), {})
    case "roots/list": {
      const listRoots = handlers.listRoots
      if (listRoots === undefined) return Effect.fail(methodNotFound(request.method))
      return Effect.map(listRoots(), (roots) => ({ roots }))
    }
    case "sampling/createMessage": {
      const createMessage = handlers.createMessage
      if (createMessage === undefined) return Effect.fail(methodNotFound(request.method))
      return LazySchemas.load().pipe(
        Effect.flatMap((schemas) => schemas.samplingParams(request.params ?? {})),
        Effect.flatMap(createMessage)
      )
    }
    case "elicitation/create": {
      const elicit = handlers.elicit
      if (elicit === undefined) return Effect.fail(methodNotFound(request.method))
      return LazySchemas.load().pipe(
        Effect.flatMap((schemas) => schemas.elicitParams(request.params ?? {})),
        Effect.flatMap((p) => {
          const mode = p.mode ?? "form"
          if (mode === "url" && handlers.elicitUrlMode !== true) {
            return Effect.fail(
              new RpcError({
                code: JsonRpc.ErrorCode.InvalidParams,
                rpcMessage: "URL-mode elicitation was not advertised by this client",
                method: request.method
              })
            )
          }
          return elicit({ ...p, mode })
        })
      )
    }
    default:
      return Effect.fail(methodNotFound(request.method))
  }
}
