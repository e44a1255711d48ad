/**
 * Which transport a call goes through (`ClientSpans.senderFor`): a fiber
 * that traces nothing sends through the transport the spans wrap, a fiber
 * with a tracer through the spans. `McpClient`'s calls pick per call, so a
 * tracer installed for one call gives that call its span and `_meta` trace
 * context, and the calls around it go out as they were given.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Tracer } from "effect"
import * as InMemoryTransport from "../../src/bridge/InMemoryTransport.ts"
import * as ClientSpans from "../../src/client/internal/ClientSpans.ts"
import * as McpClient from "../../src/client/McpClient.ts"
import * as McpServer from "../../src/server/McpServer.ts"
import { recordingTracer } from "../fixtures/RecordingTracer.ts"

/** A server whose `echo-meta` tool answers with the `_meta` its call carried. */
const server = McpServer.make({ serverInfo: { name: "meta", version: "1.0.0" }, enforceInitialized: false }).pipe(
  McpServer.method("tools/call", {}, (params) =>
    Effect.succeed({
      content: [{ type: "text", text: JSON.stringify((params as { _meta?: unknown })._meta ?? null) }]
    }))
)

const metaOf = (result: { readonly content: ReadonlyArray<unknown> }) =>
  JSON.parse((result.content[0] as { text: string }).text) as Record<string, unknown>

describe("ClientSpans.senderFor", () => {
  it.effect("picks the wrapped transport for an untraced fiber and the spans for a traced one", () =>
    Effect.gen(function*() {
      const { handler } = yield* McpServer.toHandler(server)
      const pair = yield* InMemoryTransport.makePair(handler)
      const traced = ClientSpans.traced(pair.client)
      const senderFor = ClientSpans.senderFor(traced)
      expect(yield* Effect.withFiber((fiber) => Effect.succeed(senderFor(fiber)))).toBe(pair.client)
      const { tracer } = recordingTracer()
      const withTracer = yield* Effect.withFiber((fiber) => Effect.succeed(senderFor(fiber))).pipe(
        Effect.provideService(Tracer.Tracer, tracer)
      )
      expect(withTracer).toBe(traced)
      // A transport the spans do not wrap is its own sender.
      const plainSender = ClientSpans.senderFor(pair.client)
      expect(yield* Effect.withFiber((fiber) => Effect.succeed(plainSender(fiber)))).toBe(pair.client)
    }).pipe(Effect.scoped))

  it.effect("McpClient: a tracer installed for one call gives it a span and a traceparent; the others get neither", () =>
    Effect.gen(function*() {
      const { spans, tracer } = recordingTracer()
      const { handler } = yield* McpServer.toHandler(server)
      const pair = yield* InMemoryTransport.makePair(handler)
      const client = yield* McpClient.fromTransport(pair.client, { protocol: "2025-11-25" })
      const before = yield* client.callTool({ name: "echo-meta" })
      const traced = yield* client.callTool({ name: "echo-meta" }).pipe(Effect.provideService(Tracer.Tracer, tracer))
      const after = yield* client.callTool({ name: "echo-meta" })
      expect(metaOf(before).traceparent).toBeUndefined()
      expect(metaOf(after).traceparent).toBeUndefined()
      expect(metaOf(traced).traceparent).toEqual(expect.stringMatching(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/))
      const calls = spans.filter((s) => s.kind === "client")
      expect(calls.map((s) => s.name)).toEqual(["tools/call echo-meta"])
      expect(metaOf(traced).traceparent).toContain(calls[0]!.spanId)
      // Every call carried its own progress token, traced or not.
      expect(typeof metaOf(before).progressToken).toBe("number")
      expect(typeof metaOf(traced).progressToken).toBe("number")
    }).pipe(Effect.scoped))
})
