/**
 * The context a session's handlers run with. By default the session's
 * services go on top of the context of the fiber the request starts in
 * (merged once per distinct parent context). With `servicesOnly` (HTTP
 * sessions) they run with the session's services alone, carrying only the
 * request's peer and the span it runs under.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Tracer from "effect/Tracer"
import * as NetworkPeer from "../../src/internal/NetworkPeer.ts"
import * as HandlerServices from "../../src/server/internal/HandlerServices.ts"

class Config extends Context.Service<Config, { readonly name: string }>()("test/HandlerServices/Config") {}
class PostOnly extends Context.Service<PostOnly, string>()("test/HandlerServices/PostOnly") {}

const session: Context.Context<any> = Context.make(Config, { name: "session" })
const span = (spanId: string) => Tracer.externalSpan({ traceId: "t".repeat(32), spanId, sampled: true })
const peer: NetworkPeer.Peer = { transport: "tcp", protocol: "http", address: "127.0.0.1" }
const postContext = (extra: (c: Context.Context<never>) => Context.Context<never> = (c) => c) =>
  extra(Context.make(PostOnly, "post").pipe(Context.add(Config, { name: "post" })) as Context.Context<never>)

describe("HandlerServices", () => {
  it("by default puts the session's services over the fiber's context, once per parent context", () => {
    const services = HandlerServices.make(session, {})
    const parent = postContext((c) => Context.add(c, NetworkPeer.CurrentPeer, peer))
    const made = services(parent)
    expect(Context.get(made, Config).name).toBe("session")
    expect(Context.get(made as Context.Context<any>, PostOnly)).toBe("post")
    expect(Context.get(made, NetworkPeer.CurrentPeer)).toBe(peer)
    expect(services(parent)).toBe(made)
  })

  it("with servicesOnly runs with the session's services alone, and copies nothing without a peer or span", () => {
    const services = HandlerServices.make(session, { servicesOnly: true })
    const made = services(postContext())
    expect(Context.get(made, Config).name).toBe("session")
    expect(Context.getOption(made as Context.Context<any>, PostOnly)._tag).toBe("None")
    expect(made).toBe(session)
  })

  it("with servicesOnly carries the request's peer and the span it runs under", () => {
    const services = HandlerServices.make(session, { servicesOnly: true })
    const http = span("a".repeat(16))
    const made = services(postContext((c) =>
      c.pipe(Context.add(NetworkPeer.CurrentPeer, peer), Context.add(Tracer.ParentSpan, http))
    ))
    expect(Context.get(made, NetworkPeer.CurrentPeer)).toBe(peer)
    expect(Context.get(made, Tracer.ParentSpan)).toBe(http)
    expect(Context.get(made, Config).name).toBe("session")
  })

  it("with servicesOnly keeps a span the session's services hold", () => {
    const own = span("b".repeat(16))
    const services = HandlerServices.make(Context.add(session, Tracer.ParentSpan, own), { servicesOnly: true })
    const made = services(postContext((c) => Context.add(c, Tracer.ParentSpan, span("c".repeat(16)))))
    expect(Context.get(made, Tracer.ParentSpan)).toBe(own)
  })
})
