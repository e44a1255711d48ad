/**
 * One `effect/http` route serving 2026-07-28 `tools/call` of `echo` with the
 * checks a compliant stateless server makes on every POST, written as plain
 * synchronous code around the transport's own check functions, and nothing
 * else: the Host and Origin allow-lists, a routing header sent twice, the
 * `Content-Type` and `Accept`, the body limit, JSON-RPC validation, the
 * version header against `_meta`, `Mcp-Method` and `Mcp-Name`, and `Vary:
 * Origin` on the answer. No middleware, no slots, no spans, no handler
 * fibers, no sessions: what the protocol's checks cost on `effect/http`,
 * between one bare route (server-effect-min.ts) and the transport with a
 * bare handler (bench/stateless-server/server-bare.ts).
 *
 *   node bench/http/server-effect-checked.ts
 */
import * as Effect from "effect/Effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import * as JsonRpc from "../../src/JsonRpc.ts"
import * as EraRouting from "../../src/server/http/EraRouting.ts"
import * as MetaHeaders from "../../src/server/http/MetaHeaders.ts"
import * as RequestBody from "../../src/server/http/RequestBody.ts"
import * as RequestHeaders from "../../src/server/http/RequestHeaders.ts"
import * as Security from "../../src/server/http/Security.ts"
import { echoCallResult } from "../stateless-server/control.ts"
import { runRoutes } from "./effect-route.ts"

const STATELESS = ["2026-07-28"]
const BODY_LIMIT = 4 * 1024 * 1024
let lists = Security.defaultAllowLists(undefined, {})

const refuse = (id: JsonRpc.RequestId | null, rejection: MetaHeaders.Rejection) =>
  HttpServerResponse.jsonUnsafe(JsonRpc.failure(id, rejection.code, rejection.message, rejection.data), {
    status: rejection.status
  })

const invalid = (message: string) =>
  HttpServerResponse.jsonUnsafe(JsonRpc.invalidRequest(null, message), { status: 400 })

const answer = (headers: RequestHeaders.RequestHeaders, body: string): HttpServerResponse.HttpServerResponse => {
  const decoded = JsonRpc.decode(body)
  if (decoded._tag === "ParseError") return Security.errorResponse(400, JsonRpc.ErrorCode.ParseError, "Parse error")
  if (decoded._tag === "Batch") return invalid("Invalid Request: one message per POST")
  const classified = decoded.message
  if (classified._tag !== "Request") return invalid("Invalid Request: a request is expected")
  const rpc = classified.message
  if (!MetaHeaders.isStatelessVersion(headers["mcp-protocol-version"])) {
    return refuse(rpc.id, MetaHeaders.notStateless(headers["mcp-protocol-version"], rpc, STATELESS))
  }
  const rejected = MetaHeaders.checkRequest(headers, rpc, STATELESS)
  if (rejected !== undefined) return refuse(rpc.id, rejected)
  if (rpc.method !== "tools/call") return HttpServerResponse.jsonUnsafe(JsonRpc.methodNotFound(rpc.id, rpc.method))
  const reply = JsonRpc.success(rpc.id, echoCallResult(rpc.params))
  return HttpServerResponse.text(JSON.stringify(reply), { contentType: "application/json" })
}

const handle = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
  // Read as the transport reads them behind its own listener.
  const headers = RequestHeaders.of(request, true)
  const origin = headers["origin"]
  if (!Security.isHostAllowed(lists, headers["host"])) {
    return Effect.succeed(Security.invalid(403, "Forbidden: Host header not allowed"))
  }
  if (!Security.isOriginAllowed(lists, origin)) return Effect.succeed(Security.invalid(403, "Forbidden: Origin not allowed"))
  const repeated = EraRouting.repeatedHeader(request)
  if (repeated !== undefined) return Effect.succeed(repeated)
  if (!RequestBody.isJsonContent(headers["content-type"])) {
    return Effect.succeed(Security.invalid(415, "Unsupported Media Type: Content-Type must be application/json"))
  }
  if (!RequestBody.accepts(headers["accept"]).json) {
    return Effect.succeed(Security.invalid(406, "Not Acceptable: Accept must include application/json"))
  }
  return Effect.match(RequestBody.read(request, headers, BODY_LIMIT), {
    onSuccess: (body) => vary(answer(headers, body)),
    onFailure: (error) => vary(error._tag === "BodyTooLarge" ? RequestBody.tooLarge(error) : RequestBody.unreadable())
  })
})

const vary = (response: HttpServerResponse.HttpServerResponse) => HttpServerResponse.setHeader(response, "vary", "Origin")

runRoutes(HttpRouter.add("POST", "/mcp", handle), (port) => {
  lists = Security.defaultAllowLists({ host: "127.0.0.1", port }, {})
})
