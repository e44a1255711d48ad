/**
 * Where the Effect steps of one 2026-07-28 `tools/call` on the HTTP server
 * come from: each kind of step with the function it carries (or, for a value,
 * the continuation it goes to), per request, most frequent first
 * (test/fixtures/EffectWork.ts, `bySteps`).
 *
 *   npx node bench/profile/steps-by-kind.ts [calls=100]
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { echoCallServer as definition, STATELESS_META as META } from "../../test/fixtures/echo-call-server.ts"
import * as EffectWork from "../../test/fixtures/EffectWork.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import { loadHttpServerTransport } from "../our-modules.ts"

const calls = Number(process.argv[2] ?? "100")
const HttpServerTransport = await loadHttpServerTransport()
let nextId = 0

await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const counter = EffectWork.make({ bySteps: true })
  const handle = yield* McpServer.toHandler(definition)
  const context = yield* Layer.build(HttpServerTransport.layer(handle.handler, { port: 0 }).pipe(Layer.provide(counter.layer)))
  const url = Option.getOrThrow(Context.get(context, HttpServerTransport.HttpServerTransport).url)
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "echo"
  }
  const once = async () => {
    const params = { name: "echo", arguments: { text: "hi" }, _meta: META }
    const body = JSON.stringify({ jsonrpc: "2.0", id: ++nextId, method: "tools/call", params })
    await (await fetch(url, { method: "POST", headers, body })).text()
  }
  yield* Effect.promise(async () => {
    for (let i = 0; i < 50; i++) await once()
    counter.steps()
    for (let i = 0; i < calls; i++) await once()
  })
  let total = 0
  for (const [kind, n] of counter.steps()) {
    total += n
    process.stdout.write(`${(n / calls).toFixed(2).padStart(6)}  ${kind}\n`)
  }
  process.stdout.write(`${(total / calls).toFixed(2).padStart(6)}  in all\n`)
})))
process.exit(0)
