/**
 * Routing the frames that arrive on the channel of one request (a POST's
 * JSON or SSE answer) and telling when that request is settled.
 */
import * as Effect from "effect/Effect"
import * as JsonRpc from "../../JsonRpc.ts"
import { MalformedMessage, NoResponse } from "../../McpError.ts"
import type * as ClientCore from "./ClientCore.ts"

/** The failure of a request whose channel ended without its response. */
export const noResponse = (request: JsonRpc.JsonRpcRequest): NoResponse =>
  new NoResponse({ id: request.id, method: request.method })

/**
 * Routes one frame that arrived in answer to `request` and tells whether
 * the request is settled now. An error without an id on this request's own
 * channel is this request's error; a frame that is not JSON fails this
 * request and nothing else. (A broken response that names its request is
 * ClientCore's to settle, as on every transport.)
 */
export const dispatchFor = (
  core: ClientCore.ClientCore,
  request: JsonRpc.JsonRpcRequest,
  text: string
): Effect.Effect<boolean, MalformedMessage> => {
  const decoded = JsonRpc.decode(text)
  if (decoded._tag === "ParseError") return Effect.fail(MalformedMessage.make(text, `invalid JSON: ${decoded.reason}`))
  if (decoded._tag === "Single") {
    const answered = answers(decoded.message, request)
    return Effect.map(routeFor(core, request, decoded.message, text), () => answered || !core.correlation.isPending(request.id))
  }
  let answered = false
  for (const message of decoded.messages) answered ||= answers(message, request)
  return Effect.forEach(decoded.messages, (message) => routeFor(core, request, message, text), { discard: true }).pipe(
    Effect.map(() => answered || !core.correlation.isPending(request.id))
  )
}

const sameId = (a: JsonRpc.RequestId | null, b: JsonRpc.RequestId) => a !== null && String(a) === String(b)

/** The response to `request` (once routed, the request is settled: by it, or earlier by its deadline). */
const answers = (message: JsonRpc.Classified, request: JsonRpc.JsonRpcRequest): boolean =>
  (message._tag === "Success" || message._tag === "Failure") &&
  (message.message.id === null ? message._tag === "Failure" : sameId(message.message.id, request.id))

const routeFor = (
  core: ClientCore.ClientCore,
  request: JsonRpc.JsonRpcRequest,
  message: JsonRpc.Classified,
  text: string
) => {
  if (message._tag === "Failure" && message.message.id === null) {
    return core.dispatch({ _tag: "Failure", message: { ...message.message, id: request.id } }, text)
  }
  return core.dispatch(message, text)
}
