import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Layer, Logger, References, Scope, Stream, SubscriptionRef } from "effect"
import { ClientTransport, type Diagnostic } from "../../src/client/ClientTransport.ts"
import * as NodeSpawner from "../../src/client/NodeSpawner.ts"
import * as StdioClientTransport from "../../src/client/StdioClientTransport.ts"
import { RpcError } from "../../src/McpError.ts"
import { malformedResponses, malformedShapeNames } from "../fixtures/malformed-responses.ts"
import { isAlive, testServer } from "../fixtures/stdio-helpers.ts"

const server = testServer

/** Fails with the typed error, or dies if the effect succeeded. */
const failure = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.flip(effect)

/** Starts collecting a stream now (the subscription exists when this returns). */
const collect = <A>(stream: Stream.Stream<A>, n: number) =>
  Stream.take(stream, n).pipe(Stream.runCollect, Effect.forkChild({ startImmediately: true }))

/**
 * Polls a condition with a bound, only where no signal exists. (What the
 * server received needs no polling: it handles lines in order, and a
 * cancellation is queued before the caller sees its request end.)
 */
const eventually = <A, E, R>(effect: Effect.Effect<A, E, R>, ok: (a: A) => boolean, tries = 200) =>
  Effect.gen(function*() {
    for (let i = 0; i < tries; i++) {
      const a = yield* effect
      if (ok(a)) return a
      yield* Effect.sleep("10 millis")
    }
    return yield* Effect.die(new Error("condition not reached"))
  })

const cancellationsOf = (t: StdioClientTransport.StdioClientTransportShape) =>
  Effect.map(
    t.request("test/cancellations", undefined, { timeout: "10 seconds" }),
    (r) => (r as { cancellations: Array<{ requestId: unknown; reason: string }> }).cancellations
  )

describe("StdioClientTransport", () => {
  describe("lifecycle and round trips", () => {
    it.live("initialize, notifications/initialized, ping and tools/list against our test server", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server())
        expect(t.kind).toBe("stdio")
        expect((yield* SubscriptionRef.get(t.state))._tag).toBe("Ready")
        const init = yield* t.request("initialize", {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "test", version: "0" }
        })
        expect(init).toMatchObject({ protocolVersion: "2025-06-18", serverInfo: { name: "stdio-test-server" } })
        yield* t.notify("notifications/initialized")
        expect(yield* t.request("ping")).toEqual({})
        expect(yield* t.request("tools/list")).toEqual({ tools: [{ name: "echo", inputSchema: { type: "object" } }] })
        const seen = yield* t.request("test/notifications")
        expect(seen).toEqual({ notifications: ["notifications/initialized"] })
        expect(yield* t.pendingCount).toBe(0)
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("layer(config) provides the ClientTransport service", () =>
      Effect.gen(function*() {
        const t = yield* ClientTransport
        expect(t.kind).toBe("stdio")
        expect(yield* t.request("echo", { hello: "world" })).toEqual({ hello: "world" })
      }).pipe(Effect.provide(StdioClientTransport.layer(server()).pipe(Layer.provide(NodeServices.layer)))))

    it.live("NodeSpawner.layer alone runs the transport: spawn, a checked cwd, the child gone with the scope", () =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const t = yield* StdioClientTransport.make(server([], { cwd: "/tmp" })).pipe(Scope.provide(scope))
        expect(yield* t.request("test/cwd")).toEqual({ cwd: "/tmp" })
        const missing = yield* failure(
          StdioClientTransport.make(server([], { cwd: "/no/such/dir/for/mcp" })).pipe(Scope.provide(scope))
        )
        expect(missing._tag).toBe("SpawnError")
        yield* Scope.close(scope, Exit.void)
        expect(isAlive(t.pid)).toBe(false)
      }).pipe(Effect.provide(NodeSpawner.layer)))

    it.live("RPC errors from the server are typed RpcError with code and method", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server())
        const error = yield* failure(t.request("no/such/method"))
        expect(error).toBeInstanceOf(RpcError)
        expect(error).toMatchObject({ code: -32601, method: "no/such/method" })
        expect(error.message).toBe("MCP error -32601: Method not found")
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("many concurrent requests each get their own response", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server())
        const results = yield* Effect.forEach(
          Array.from({ length: 500 }, (_, i) => i),
          (i) => t.request("echo", { i, text: `élan ${i} 😀` }),
          { concurrency: "unbounded" }
        )
        expect(results).toEqual(Array.from({ length: 500 }, (_, i) => ({ i, text: `élan ${i} 😀` })))
        expect(yield* t.pendingCount).toBe(0)
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("a response written in pieces split inside UTF-8 characters arrives whole", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server())
        const result = { text: "día 😀 ünïcødé ✓", n: [1, 2, 3] }
        // Byte offsets chosen to land inside the multi-byte characters of the JSON.
        for (const cuts of [[1], [30, 31, 32, 33], [40, 41, 42, 43, 44, 45, 46], Array.from({ length: 60 }, (_, i) => i + 1)]) {
          expect(yield* t.request("test/chunked", { result, cuts, delayMs: 2 })).toEqual(result)
        }
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("server notifications reach the notifications stream", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server())
        const got = yield* collect(t.notifications, 2)
        yield* t.request("test/notify", { method: "notifications/tools/list_changed" })
        yield* t.request("test/notify", { method: "notifications/message", params: { level: "info", data: "hi" } })
        const messages = yield* Fiber.join(got)
        expect(messages.map((m) => m.method)).toEqual(["notifications/tools/list_changed", "notifications/message"])
        expect(messages[1]!.params).toEqual({ level: "info", data: "hi" })
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
  })

  describe("spawn configuration", () => {
    it.live("a command that does not exist fails with SpawnError carrying the command", () =>
      Effect.gen(function*() {
        const error = yield* failure(
          StdioClientTransport.make({ command: "definitely-not-a-command-mcp-xyz", args: ["--stdio"] })
        )
        expect(error._tag).toBe("SpawnError")
        expect(error.command).toBe("definitely-not-a-command-mcp-xyz")
        expect(error.args).toEqual(["--stdio"])
        expect(error.message).toContain("Failed to spawn definitely-not-a-command-mcp-xyz --stdio")
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("a working directory that does not exist fails with SpawnError", () =>
      Effect.gen(function*() {
        const error = yield* failure(StdioClientTransport.make(server([], { cwd: "/no/such/dir/for/mcp" })))
        expect(error._tag).toBe("SpawnError")
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("cwd is applied", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server([], { cwd: "/tmp" }))
        expect(yield* t.request("test/cwd")).toEqual({ cwd: "/tmp" })
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("env is laid over the parent environment by default; undefined removes; inheritEnv: false replaces", () =>
      Effect.gen(function*() {
        process.env.STDIO_TEST_FROM_PARENT = "parent"
        process.env.STDIO_TEST_TO_REMOVE = "present"
        const envOf = (t: StdioClientTransport.StdioClientTransportShape, name: string) =>
          Effect.map(t.request("test/env", { name }), (r) => (r as { value: string | null }).value)
        yield* Effect.scoped(Effect.gen(function*() {
          const t = yield* StdioClientTransport.make(
            server([], { env: { STDIO_TEST_OVERRIDE: "child", STDIO_TEST_TO_REMOVE: undefined } })
          )
          expect(yield* envOf(t, "STDIO_TEST_FROM_PARENT")).toBe("parent")
          expect(yield* envOf(t, "STDIO_TEST_OVERRIDE")).toBe("child")
          expect(yield* envOf(t, "STDIO_TEST_TO_REMOVE")).toBeNull()
          expect(yield* envOf(t, "PATH")).toBe(process.env.PATH)
        }))
        yield* Effect.scoped(Effect.gen(function*() {
          const t = yield* StdioClientTransport.make(server([], { env: { ONLY_THIS: "1" }, inheritEnv: false }))
          expect(yield* envOf(t, "ONLY_THIS")).toBe("1")
          expect(yield* envOf(t, "STDIO_TEST_FROM_PARENT")).toBeNull()
        }))
        delete process.env.STDIO_TEST_FROM_PARENT
        delete process.env.STDIO_TEST_TO_REMOVE
      }).pipe(Effect.provide(NodeServices.layer)))
  })

  describe("server-to-client requests", () => {
    it.live("the default handler answers ping with {} and anything else with -32601", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server())
        expect(yield* t.request("test/askClient", { method: "ping" })).toEqual({
          response: { jsonrpc: "2.0", id: "srv-1", result: {} }
        })
        const other = (yield* t.request("test/askClient", { method: "roots/list" })) as {
          response: { error: { code: number } }
        }
        expect(other.response.error.code).toBe(-32601)
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("setRequestHandler replaces the handler; an RpcError becomes the error reply", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server())
        yield* t.setRequestHandler((request) =>
          request.method === "roots/list"
            ? Effect.succeed({ roots: [{ uri: "file:///tmp", name: "tmp" }] })
            : Effect.fail(new RpcError({ code: -32602, rpcMessage: "nope" }))
        )
        expect(yield* t.request("test/askClient", { method: "roots/list" })).toEqual({
          response: { jsonrpc: "2.0", id: "srv-1", result: { roots: [{ uri: "file:///tmp", name: "tmp" }] } }
        })
        expect(yield* t.request("test/askClient", { method: "sampling/createMessage" })).toEqual({
          response: { jsonrpc: "2.0", id: "srv-2", error: { code: -32602, message: "nope" } }
        })
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
  })

  describe("failure table, stdio rows", () => {
    it.live("malformed stdout lines are skipped and reported; the connection keeps going", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server())
        const diagnostics = yield* collect(t.diagnostics, 3)
        const result = yield* t.request("test/garbage", {
          lines: ["this is not json", "{\"jsonrpc\":\"1.0\",\"id\":999,\"result\":{}}", "   ", "{\"unterminated\": "]
        })
        expect(result).toEqual({})
        const seen: ReadonlyArray<Diagnostic> = yield* Fiber.join(diagnostics)
        expect(seen.map((d) => d._tag)).toEqual(["MalformedFrame", "InvalidMessage", "MalformedFrame"])
        expect(seen[0]).toMatchObject({ text: "this is not json" })
        expect(yield* t.request("ping")).toEqual({})
        expect((yield* SubscriptionRef.get(t.state))._tag).toBe("Ready")
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("responses with unknown ids are reported as diagnostics and ignored", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server())
        const diagnostics = yield* collect(t.diagnostics, 2)
        expect(yield* t.request("test/unknownResponse")).toEqual({ strays: 2 })
        const seen = yield* Fiber.join(diagnostics)
        expect(seen).toEqual([
          expect.objectContaining({ _tag: "UnknownResponse", id: "no-such-request" }),
          expect.objectContaining({ _tag: "UnknownResponse", id: 987654321 })
        ])
        expect(yield* t.request("ping")).toEqual({})
        expect(yield* t.pendingCount).toBe(0)
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("an oversized incoming line is skipped with a MessageTooLarge diagnostic; framing stays in sync", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server([], { maxMessageBytes: 4096 }))
        const diagnostics = yield* collect(t.diagnostics, 1)
        const notes = yield* collect(t.notifications, 1)
        // 200 KiB crosses many pipe chunks, so the limit is hit mid-line.
        expect(yield* t.request("test/big", { bytes: 200 * 1024 })).toEqual({ after: "big" })
        const [d] = yield* Fiber.join(diagnostics)
        expect(d).toMatchObject({ _tag: "MessageTooLarge", limit: 4096 })
        expect((d as { size: number }).size).toBeGreaterThan(4096)
        yield* t.request("test/notify", { method: "notifications/small" })
        expect((yield* Fiber.join(notes)).map((n) => n.method)).toEqual(["notifications/small"])
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("an outgoing message over the limit fails that request with MessageTooLarge; nothing is sent", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server([], { maxMessageBytes: 1000 }))
        const error = yield* failure(t.request("echo", { blob: "é".repeat(600) }))
        expect(error).toMatchObject({ _tag: "MessageTooLarge", direction: "outgoing", limit: 1000 })
        expect((error as { size: number }).size).toBeGreaterThan(1000)
        const notifyError = yield* failure(t.notify("notifications/big", { blob: "x".repeat(2000) }))
        expect(notifyError._tag).toBe("MessageTooLarge")
        expect(yield* t.pendingCount).toBe(0)
        expect(yield* t.request("echo", { ok: true })).toEqual({ ok: true })
        // The failed request was never written, so the server has nothing to cancel.
        expect(yield* cancellationsOf(t)).toEqual([])
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("child exit mid-request: pending requests fail with TransportClosed carrying exit code and stderr tail", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server())
        const hanging = yield* Effect.forkChild(t.request("hang"), { startImmediately: true })
        const dying = yield* Effect.forkChild(
          t.request("test/exit", { code: 3, stderr: ["panic: out of cheese", "at line 42"] }),
          { startImmediately: true }
        )
        for (const fiber of [hanging, dying]) {
          const exit = yield* Fiber.await(fiber)
          const error = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
          expect(error).toMatchObject({ _tag: "TransportClosed", reason: "process exited", exitCode: 3 })
          expect((error as { stderrTail: Array<string> }).stderrTail).toEqual(["panic: out of cheese", "at line 42"])
          expect((error as Error).message).toContain("Transport closed (process exited, exit code 3)")
          expect((error as Error).message).toContain("  panic: out of cheese")
        }
        const closed = yield* t.awaitClosed
        expect(closed.exitCode).toBe(3)
        const state = yield* SubscriptionRef.get(t.state)
        expect(state._tag).toBe("Closed")
        expect(yield* t.pendingCount).toBe(0)
        // Later calls fail at once with the same reason.
        expect(yield* failure(t.request("ping"))).toBe(closed)
        expect(yield* failure(t.notify("notifications/x"))).toBe(closed)
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("death by signal is reported with the signal name", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server())
        const error = yield* failure(t.request("test/exit", { signal: "SIGKILL" }))
        expect(error).toMatchObject({ _tag: "TransportClosed", reason: "process exited", signal: "SIGKILL" })
        expect(error.message).toContain("signal SIGKILL")
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("a response written just before exit still arrives", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server())
        expect(yield* t.request("test/exit", { respondFirst: true, code: 0 })).toEqual({ exiting: true })
        const closed = yield* t.awaitClosed
        expect(closed).toMatchObject({ reason: "process exited", exitCode: 0 })
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("a server that dies at start-up: the close carries its exit code and stderr", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server(["--exit-on-start=2"]))
        const error = yield* failure(t.request("ping"))
        expect(error).toMatchObject({
          _tag: "TransportClosed",
          exitCode: 2,
          stderrTail: ["fatal: cannot start", "missing configuration file"]
        })
        expect(yield* t.awaitClosed).toBe(error)
        expect((yield* SubscriptionRef.get(t.state))._tag).toBe("Closed")
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("stdout closed while the process lives: the transport closes", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(
          server([], { shutdown: { gracePeriod: "300 millis", killAfter: "300 millis", exitDrain: "100 millis" } })
        )
        const pending = yield* Effect.forkChild(t.request("hang"), { startImmediately: true })
        yield* Effect.forkChild(t.request("test/closeStdout"))
        const exit = yield* Fiber.await(pending)
        const error = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
        expect(error).toMatchObject({ _tag: "TransportClosed", reason: "server closed stdout", exitCode: undefined })
        expect(isAlive(t.pid)).toBe(true)
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("timeout: RequestTimeout with the documented wording, entry removed, server receives notifications/cancelled", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server([], { timeout: "150 millis" }))
        const byDefault = yield* failure(t.request("slow", { ms: 10_000 }))
        expect(byDefault).toMatchObject({ _tag: "RequestTimeout", method: "slow", timeoutMs: 150 })
        expect(byDefault.message).toMatch(/^Request timeout after 150ms/)
        const perCall = yield* failure(t.request("slow", { ms: 10_000 }, { timeout: "80 millis" }))
        expect(perCall).toMatchObject({ _tag: "RequestTimeout", timeoutMs: 80 })
        expect(yield* t.pendingCount).toBe(0)
        const cancellations = yield* cancellationsOf(t)
        expect(cancellations).toEqual([
          { requestId: (byDefault as { id: number }).id, reason: "Request timeout after 150ms" },
          { requestId: (perCall as { id: number }).id, reason: "Request timeout after 80ms" }
        ])
        // A late-enough slow call still works, and a per-call infinite timeout is honoured.
        expect(yield* t.request("slow", { ms: 200 }, { timeout: "Infinity" })).toEqual({ slept: 200 })
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("caller abort (fiber interruption): entry removed, server receives notifications/cancelled", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server())
        const fiber = yield* Effect.forkChild(t.request("hang"), { startImmediately: true })
        expect(yield* t.pendingCount).toBe(1)
        yield* Fiber.interrupt(fiber)
        const exit = yield* Fiber.await(fiber)
        expect(Exit.hasInterrupts(exit)).toBe(true)
        expect(yield* t.pendingCount).toBe(0)
        const cancellations = yield* cancellationsOf(t)
        expect(cancellations).toEqual([{ requestId: 1, reason: "Request cancelled by the caller" }])
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("caller abort through an AbortSignal (Effect.runPromise with signal) behaves the same", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server())
        const controller = new AbortController()
        const promise = Effect.runPromise(t.request("hang"), { signal: controller.signal })
        yield* eventually(t.pendingCount, (n) => n === 1)
        controller.abort(new Error("user pressed escape"))
        const outcome = yield* Effect.promise(() => promise.then(() => "resolved", () => "rejected"))
        expect(outcome).toBe("rejected")
        expect(yield* t.pendingCount).toBe(0)
        const cancellations = yield* cancellationsOf(t)
        expect(cancellations).toEqual([{ requestId: 1, reason: "Request cancelled by the caller" }])
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("initialize is never cancelled, even on timeout", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server(["--hang-initialize"]))
        const error = yield* failure(t.request("initialize", {}, { timeout: "100 millis" }))
        expect(error._tag).toBe("RequestTimeout")
        const interrupted = yield* Effect.forkChild(t.request("initialize", {}), { startImmediately: true })
        yield* Fiber.interrupt(interrupted)
        // The server has processed everything we sent once it answers this.
        expect(yield* cancellationsOf(t)).toEqual([])
        expect(yield* t.pendingCount).toBe(0)
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
  })

  describe("malformed answers to pending requests", () => {
    // Requests wait an hour: a request left to its timeout shows as this test timing out.
    const patient = { timeout: "1 hour" } as const

    it.live("each malformed shape fails its request at once with MalformedMessage carrying the raw answer", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server([], patient))
        const diagnostics = yield* collect(t.diagnostics, 1)
        for (const shape of malformedShapeNames) {
          const error = yield* failure(t.request("test/malformed", { shape }, patient))
          expect(error, shape).toMatchObject({
            _tag: "MalformedMessage",
            reason: malformedResponses[shape]!.reason,
            method: "test/malformed"
          })
          const id = (error as { id: number }).id
          expect(JSON.parse((error as { text: string }).text), shape).toEqual(malformedResponses[shape]!.answer(id))
          expect(error.message).toContain(`in answer to test/malformed, id ${id}`)
          expect(yield* t.pendingCount).toBe(0)
        }
        // An id echoed as a string names the request too.
        const echoed = yield* failure(t.request("test/malformed", { shape: "error without code", idAsString: true }, patient))
        expect(echoed).toMatchObject({ _tag: "MalformedMessage", method: "test/malformed" })
        // A failed request is not also reported: the first diagnostic is the stray answer that follows.
        expect(yield* t.request("test/unknownResponse", undefined, patient)).toEqual({ strays: 2 })
        expect(yield* Fiber.join(diagnostics)).toEqual([
          expect.objectContaining({ _tag: "UnknownResponse", id: "no-such-request" })
        ])
        expect(yield* t.request("ping", undefined, patient)).toEqual({})
        expect(yield* t.pendingCount).toBe(0)
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)), 20_000)

    it.live("the raw answer in the error is cut to a bounded length", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server([], patient))
        const error = yield* failure(t.request("test/malformed", { shape: "error not an object", padding: 100_000 }, patient))
        const text = (error as { text: string }).text
        expect(text.startsWith("{\"jsonrpc\":\"2.0\"")).toBe(true)
        expect(text.length).toBeLessThan(300)
        expect(text).toMatch(/… \(\d+ more characters\)$/)
        expect(yield* t.pendingCount).toBe(0)
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)), 20_000)

    it.live("a parse error without an id fails the one pending request with RpcError -32700", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server([], patient))
        const error = yield* failure(t.request("test/parseErrorWithoutId", undefined, patient))
        expect(error).toMatchObject({ _tag: "RpcError", code: -32700, rpcMessage: "Parse error", method: "test/parseErrorWithoutId" })
        expect(yield* t.pendingCount).toBe(0)
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)), 20_000)

    it.live("with two requests pending, a parse error without an id is only a diagnostic", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server([], patient))
        const diagnostics = yield* collect(t.diagnostics, 1)
        const hanging = yield* Effect.forkChild(t.request("hang", undefined, patient), { startImmediately: true })
        expect(yield* t.request("test/parseErrorWithoutId", { thenReply: true }, patient)).toEqual({ after: "parse error" })
        expect(yield* Fiber.join(diagnostics)).toEqual([expect.objectContaining({ _tag: "UnknownResponse", id: null })])
        expect(yield* t.pendingCount).toBe(1)
        yield* Fiber.interrupt(hanging)
        expect(yield* t.pendingCount).toBe(0)
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)), 20_000)
  })

  describe("stderr", () => {
    it.live("stderr lines are streamed, kept in a bounded tail and logged at debug level", () =>
      Effect.gen(function*() {
        const logged: Array<{ level: string; message: unknown }> = []
        const capture = Logger.make((o) => {
          logged.push({ level: o.logLevel, message: o.message })
        })
        yield* Effect.gen(function*() {
          const t = yield* StdioClientTransport.make(server(["--banner"], { stderr: { tailLines: 3 } }))
          const lines = Array.from({ length: 10 }, (_, i) => `log line ${i} ✓`)
          const streamed = yield* collect(t.stderr, 11)
          yield* t.request("test/stderr", { lines })
          const got = yield* Fiber.join(streamed)
          // Late subscribers get the recent lines replayed, so the banner may or may not be first.
          expect(got.slice(-10)).toEqual(lines)
          expect(yield* t.stderrTail).toEqual(lines.slice(-3))
          yield* eventually(Effect.sync(() => logged.length), (n) => n >= 11)
          expect(logged.filter((l) => l.level === "Debug").map((l) => (l.message as Array<string>)[0])).toEqual([
            "test server ready",
            ...lines
          ])
        }).pipe(
          Effect.scoped,
          Effect.provide(Logger.layer([capture])),
          Effect.provideService(References.MinimumLogLevel, "Debug")
        )
      }).pipe(Effect.provide(NodeServices.layer)))

    it.live("the stderr stream ends when the server's stderr closes", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server(["--exit-on-start=1"]))
        const lines = yield* Stream.runCollect(t.stderr)
        expect(lines).toEqual(["fatal: cannot start", "missing configuration file"])
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))
  })

  describe("backpressure", () => {
    it.live("a server that stops reading makes senders wait, and nothing is lost when it resumes", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server([], { writeQueueCapacity: 2 }))
        yield* t.request("test/pauseStdin", { ms: 300 })
        const blob = "y".repeat(100 * 1024)
        const results = yield* Effect.forEach(
          Array.from({ length: 20 }, (_, i) => i),
          (i) => t.request("echo", { i, blob }),
          { concurrency: "unbounded" }
        )
        expect(results.map((r) => (r as { i: number; blob: string }).i)).toEqual(Array.from({ length: 20 }, (_, i) => i))
        expect(results.every((r) => (r as { blob: string }).blob === blob)).toBe(true)
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("a request still waiting for room times out with RequestTimeout; the ones before it stay pending", () =>
      Effect.gen(function*() {
        const t = yield* StdioClientTransport.make(server([], { writeQueueCapacity: 1 }))
        yield* t.request("test/pauseStdin", { ms: 60_000 })
        const blob = "w".repeat(256 * 1024)
        // These fill the pipe and the batch; the server reads none of them.
        const ahead = yield* Effect.forEach(
          Array.from({ length: 4 }, (_, i) => i),
          (i) => Effect.forkChild(t.request("echo", { i, blob }, { timeout: "1 minute" }), { startImmediately: true })
        )
        const error = yield* failure(t.request("echo", { late: true, blob }, { timeout: "200 millis" }))
        expect(error).toMatchObject({ _tag: "RequestTimeout", method: "echo", timeoutMs: 200 })
        expect(yield* t.pendingCount).toBe(ahead.length)
        for (const fiber of ahead) expect(fiber.pollUnsafe()).toBeUndefined()
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

    it.live("senders waiting for room fail with TransportClosed when the scope closes, without waiting for the server", () =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const t = yield* StdioClientTransport.make(server([], { writeQueueCapacity: 1 })).pipe(Scope.provide(scope))
        // The server stops reading for far longer than the test runs.
        yield* t.request("test/pauseStdin", { ms: 60_000 })
        const blob = "z".repeat(256 * 1024)
        const fibers = yield* Effect.forEach(
          Array.from({ length: 8 }, (_, i) => i),
          (i) => Effect.forkChild(t.request("echo", { i, blob }, { timeout: "1 minute" }), { startImmediately: true })
        )
        yield* Scope.close(scope, Exit.void)
        for (const fiber of fibers) {
          const exit = yield* Fiber.await(fiber)
          expect(Exit.isFailure(exit) && Cause.squash(exit.cause)).toMatchObject({
            _tag: "TransportClosed",
            reason: "transport scope closed"
          })
        }
        expect(yield* t.pendingCount).toBe(0)
        expect(isAlive(t.pid)).toBe(false)
      }).pipe(Effect.provide(NodeServices.layer)))
  })

  describe("teardown", () => {
    it.live("closing the scope ends the child and its grandchildren (graceful exit on stdin EOF)", () =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const t = yield* StdioClientTransport.make(server()).pipe(Scope.provide(scope))
        const { pid: grandchild } = (yield* t.request("test/spawnGrandchild")) as { pid: number }
        expect(isAlive(t.pid)).toBe(true)
        expect(isAlive(grandchild)).toBe(true)
        yield* Scope.close(scope, Exit.void)
        expect(isAlive(t.pid)).toBe(false)
        expect(isAlive(grandchild)).toBe(false)
        const closed = yield* t.awaitClosed
        expect(closed.reason).toBe("transport scope closed")
      }).pipe(Effect.provide(NodeServices.layer)))

    it.live("a child and grandchild that ignore stdin EOF and SIGTERM are SIGKILLed", () =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const t = yield* StdioClientTransport.make(
          server(["--ignore-sigterm", "--ignore-stdin-eof"], {
            shutdown: { gracePeriod: "100 millis", killAfter: "200 millis" }
          })
        ).pipe(Scope.provide(scope))
        const { pid: grandchild } = (yield* t.request("test/spawnGrandchild", { ignoreSigterm: true })) as {
          pid: number
        }
        expect(isAlive(grandchild)).toBe(true)
        yield* Scope.close(scope, Exit.void)
        expect(isAlive(t.pid)).toBe(false)
        expect(isAlive(grandchild)).toBe(false)
      }).pipe(Effect.provide(NodeServices.layer)))

    it.live("the grandchild goes too when the child has already exited", () =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const t = yield* StdioClientTransport.make(server()).pipe(Scope.provide(scope))
        const { pid: grandchild } = (yield* t.request("test/spawnGrandchild")) as { pid: number }
        yield* failure(t.request("test/exit", { code: 0 }))
        expect(isAlive(grandchild)).toBe(true)
        yield* Scope.close(scope, Exit.void)
        expect(isAlive(grandchild)).toBe(false)
      }).pipe(Effect.provide(NodeServices.layer)))

    it.live("closing the scope with requests in flight fails them with TransportClosed", () =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const t = yield* StdioClientTransport.make(server(["--ignore-stdin-eof"])).pipe(Scope.provide(scope))
        const fibers = yield* Effect.forEach(
          [1, 2, 3],
          () => Effect.forkChild(t.request("hang"), { startImmediately: true })
        )
        expect(yield* t.pendingCount).toBe(3)
        yield* Scope.close(scope, Exit.void)
        for (const fiber of fibers) {
          const exit = yield* Fiber.await(fiber)
          expect(Exit.isFailure(exit) && Cause.squash(exit.cause)).toMatchObject({
            _tag: "TransportClosed",
            reason: "transport scope closed"
          })
        }
        expect(yield* t.pendingCount).toBe(0)
        expect(isAlive(t.pid)).toBe(false)
        expect((yield* SubscriptionRef.get(t.state))._tag).toBe("Closed")
      }).pipe(Effect.provide(NodeServices.layer)))
  })
})
