/**
 * What a server response with headers of its own costs to build, by the way
 * it is built, in ns per response (one process, a tight loop, so a floor):
 * - `effect/http`'s constructor given the headers (`text(body, { headers })`),
 *   which copies them with `Object.setPrototypeOf`, leaving the copy in V8's
 *   dictionary mode;
 * - the constructor without them, then each set on its own (`setHeader`),
 *   as src/server/http/ResponseHeaders.ts does;
 * - the constructor without them, then all merged at once (`setHeaders`);
 * - a refusal with `Retry-After` and `Connection: close` (a draining server's
 *   503), its headers given to `jsonUnsafe`, and as `Security.errorResponse`
 *   builds it.
 *
 *   npx node bench/profile/response-headers.ts [responses=2000000]
 */
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as JsonRpc from "../../src/JsonRpc.ts"
import * as ResponseHeaders from "../../src/server/http/ResponseHeaders.ts"
import * as Security from "../../src/server/http/Security.ts"

const n = Number(process.argv[2] ?? "2000000")
const json = JSON.stringify({ jsonrpc: "2.0", id: 1, result: { content: [{ type: "text", text: "hello" }] } })
const sessions = Array.from({ length: 8 }, (_, i) => ({ "mcp-session-id": `session-${i}` }))
const contentType = "application/json"
const refusal = { "retry-after": "1", connection: "close" }

const ways: Record<string, (i: number) => HttpServerResponse.HttpServerResponse> = {
  "no headers of its own": () => HttpServerResponse.text(json, { contentType }),
  "given to the constructor": (i) => HttpServerResponse.text(json, { contentType, headers: sessions[i & 7]! }),
  "set one by one after": (i) => ResponseHeaders.add(HttpServerResponse.text(json, { contentType }), sessions[i & 7]!),
  "merged at once after": (i) => HttpServerResponse.setHeaders(HttpServerResponse.text(json, { contentType }), sessions[i & 7]!),
  "503 given to jsonUnsafe": () =>
    HttpServerResponse.jsonUnsafe(JsonRpc.failure(null, JsonRpc.ErrorCode.InvalidRequest, "Service unavailable"), {
      status: 503,
      headers: refusal
    }),
  "503 by errorResponse": () => Security.errorResponse(503, JsonRpc.ErrorCode.InvalidRequest, "Service unavailable", undefined, refusal)
}

let sink: unknown
const rounds = 5
const best = new Map<string, number>()
for (let round = 0; round < rounds; round++) {
  for (const [name, build] of Object.entries(ways)) {
    const start = process.hrtime.bigint()
    for (let i = 0; i < n; i++) sink = build(i)
    const ns = Number(process.hrtime.bigint() - start) / n
    best.set(name, Math.min(best.get(name) ?? Infinity, ns))
  }
}
if (sink === undefined) throw new Error("nothing built")
for (const [name, ns] of best) console.log(`${name.padEnd(26)} ${ns.toFixed(0).padStart(6)} ns`)
