/**
 * A request's headers as the transport reads them: names in lower case,
 * each a string.
 *
 * Behind its own listener (`HttpServerTransport.layer`) the transport reads
 * them as Node parsed them. `request.headers` copies Node's object into
 * `effect`'s `Headers` on first read: about 8,000 instructions a request,
 * where a stateless `tools/call` now costs 177,000 (BENCHMARKS.md, "Headers
 * read as Node parsed them"). There, nothing stands between Node and the routes
 * that could change a request's headers. Mounted in an application's own
 * router (`routes`, `make`), its middleware may have changed them
 * (`HttpMiddleware.xForwardedHeaders` sets `host`, say), so the transport
 * reads `request.headers` there.
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"

/**
 * Header names in lower case. Node joins repeated lines into one string, or keeps
 * the first line for headers that allow one; only `set-cookie`, which no request
 * carries, comes as an array.
 */
export type RequestHeaders = { readonly [name: string]: string | undefined }

/**
 * The request's headers, as Node parsed them when `fromNode` (the transport's own listener) and the request is
 * Node's as it arrived; else `request.headers`.
 */
export const of = (request: HttpServerRequest.HttpServerRequest, fromNode: boolean): RequestHeaders => {
  if (fromNode) {
    const incoming = NodeHttpServerRequest.toIncomingMessage(request) as
      | { readonly url?: unknown; readonly headers?: RequestHeaders }
      | undefined
    // An absolute-form target (`POST http://host/mcp`) changes the URL the router sees, and names the host
    // in place of the `Host` line (RFC 9112, 3.2.2): `request.headers` has that host.
    if (incoming?.headers !== undefined && incoming.url === request.url) return incoming.headers
  }
  return request.headers
}
