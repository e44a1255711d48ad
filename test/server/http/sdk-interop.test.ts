/**
 * The official TypeScript SDK's clients (`StreamableHTTPClientTransport`,
 * `SSEClientTransport`, with its `Client`) against our server.
 */
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import {
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  ResourceListChangedNotificationSchema
} from "@modelcontextprotocol/sdk/types.js"
import { Deferred, Effect, Option, Ref } from "effect"
import * as HttpServerTransport from "../../../src/server/HttpServerTransport.ts"
import { eventually, isClean, run, withServer } from "./helpers.ts"

const makeClient = () => {
  const client = new Client({ name: "sdk-interop", version: "1.0.0" }, { capabilities: { roots: {} } })
  client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: "file:///work", name: "work" }] }))
  return client
}

const textOf = (result: unknown) => (result as { content: Array<{ text: string }> }).content[0].text

describe("official SDK clients against the HTTP server transport", () => {
  it.live("StreamableHTTPClientTransport: tools, progress, logging, roots, server-initiated notifications, DELETE", () =>
    withServer(undefined, async ({ url, transport }) => {
      const client = makeClient()
      const logs: Array<string> = []
      client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => {
        logs.push(String(n.params.data))
      })
      let listChanged = 0
      client.setNotificationHandler(ResourceListChangedNotificationSchema, async () => {
        listChanged++
      })
      const sdkTransport = new StreamableHTTPClientTransport(new URL(url))
      await client.connect(sdkTransport)
      const sessionId = sdkTransport.sessionId!
      expect(await run(transport.sessionIds)).toEqual([sessionId])
      expect(sdkTransport.protocolVersion).toBe("2025-11-25")

      const tools = await client.listTools()
      expect(tools.tools.map((t) => t.name)).toContain("echo")
      expect(textOf(await client.callTool({ name: "echo", arguments: { text: "hello" } }))).toBe("hello")
      await client.ping()

      const progress: Array<number> = []
      const result = await client.callTool({ name: "progress", arguments: { steps: 3 } }, undefined, {
        onprogress: (p) => {
          progress.push(p.progress)
        }
      })
      expect(textOf(result)).toBe("done 3")
      expect(progress).toEqual([1, 2, 3])
      expect(logs).toEqual(["step 1", "step 2", "step 3"])

      expect(textOf(await client.callTool({ name: "roots" }))).toBe("file:///work")

      // The SDK opens the standalone GET stream after `initialized`.
      expect(await eventually(async () => (await run(transport.stats)).openStreams === 1)).toBe(true)
      const context = Option.getOrThrow(await run(transport.sessionContext(sessionId)))
      await run(context.notify("notifications/resources/list_changed"))
      expect(await eventually(() => listChanged === 1)).toBe(true)

      await sdkTransport.terminateSession()
      expect(await eventually(() => isClean(transport))).toBe(true)
      await client.close()
    }))

  it.live("a caller's abort reaches the running handler as notifications/cancelled", () =>
    withServer(undefined, async ({ url, probe, transport }) => {
      const client = makeClient()
      const sdkTransport = new StreamableHTTPClientTransport(new URL(url))
      await client.connect(sdkTransport)
      const controller = new AbortController()
      const call = client.callTool({ name: "slow" }, undefined, { signal: controller.signal }).then(
        () => "finished",
        () => "aborted"
      )
      const id = await run(Deferred.await(probe.slowStarted))
      controller.abort()
      expect(await call).toBe("aborted")
      expect(await eventually(async () => (await run(Ref.get(probe.cancelled))).includes(id))).toBe(true)
      expect(await eventually(async () => (await run(transport.stats)).inFlight === 0)).toBe(true)
      await sdkTransport.terminateSession()
      await client.close()
    }))

  it.live("SSE polling: the SDK resumes a stream the server closed mid-call and gets the result", () =>
    withServer({ sseRetry: "20 millis" }, async ({ url }) => {
      const client = makeClient()
      const logs: Array<string> = []
      client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => {
        logs.push(String(n.params.data))
      })
      const sdkTransport = new StreamableHTTPClientTransport(new URL(url))
      await client.connect(sdkTransport)
      expect(textOf(await client.callTool({ name: "reconnect" }))).toBe("reconnected")
      expect(logs).toEqual(["before close", "while away"])
      await sdkTransport.terminateSession()
      await client.close()
    }))

  it.live("stateless mode and always-SSE answers", () =>
    Effect.gen(function*() {
      for (const options of [{ mode: "stateless" }, { responseMode: "sse" }] as const) {
        yield* withServer(options, async ({ url, transport }) => {
          const client = makeClient()
          const sdkTransport = new StreamableHTTPClientTransport(new URL(url))
          await client.connect(sdkTransport)
          expect(textOf(await client.callTool({ name: "add", arguments: { a: 2, b: 3 } }))).toBe("5")
          const progress: Array<number> = []
          await client.callTool({ name: "progress", arguments: { steps: 2 } }, undefined, {
            onprogress: (p) => {
              progress.push(p.progress)
            }
          })
          expect(progress).toEqual([1, 2])
          if (options.responseMode === "sse") await sdkTransport.terminateSession()
          await client.close()
          expect(await eventually(() => isClean(transport))).toBe(true)
        })
      }
    }))

  it.live("bearer authentication through the SDK's request headers", () => {
    const authenticate: HttpServerTransport.Authenticate = (request) =>
      request.headers["authorization"] === "Bearer s3cret"
        ? Effect.succeed({ id: "user" })
        : Effect.fail(new HttpServerTransport.Unauthorized({ wwwAuthenticate: "Bearer realm=\"mcp\"" }))
    return withServer({ authenticate }, async ({ url }) => {
      const denied = makeClient()
      await expect(denied.connect(new StreamableHTTPClientTransport(new URL(url)))).rejects.toThrow(/Unauthorized/)
      const client = makeClient()
      const sdkTransport = new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { authorization: "Bearer s3cret" } }
      })
      await client.connect(sdkTransport)
      expect(textOf(await client.callTool({ name: "echo", arguments: { text: "in" } }))).toBe("in")
      await sdkTransport.terminateSession()
      await client.close()
    })
  })

  it.live("SSEClientTransport (2024-11-05): endpoint event, 202 POSTs, replies on the stream; the session ends with the connection", () =>
    withServer(undefined, async ({ base, transport }) => {
      const client = makeClient()
      const logs: Array<string> = []
      client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => {
        logs.push(String(n.params.data))
      })
      const sdkTransport = new SSEClientTransport(new URL(`${base}/sse`))
      await client.connect(sdkTransport)
      expect((await run(transport.stats)).legacySessions).toBe(1)
      expect(textOf(await client.callTool({ name: "echo", arguments: { text: "legacy" } }))).toBe("legacy")
      const progress: Array<number> = []
      await client.callTool({ name: "progress", arguments: { steps: 2 } }, undefined, {
        onprogress: (p) => {
          progress.push(p.progress)
        }
      })
      expect(progress).toEqual([1, 2])
      expect(logs).toEqual(["step 1", "step 2"])
      expect(textOf(await client.callTool({ name: "roots" }))).toBe("file:///work")
      await client.close()
      expect(await eventually(() => isClean(transport))).toBe(true)
    }))
})
