/**
 * The official tasks requester (`@modelcontextprotocol/ext-tasks` 0.2.2, its
 * `createTaskSessionFromClient` over an SDK v2 client pinned to 2026-07-28)
 * against our McpServer running tools as tasks
 * (test/fixtures/peers/our-task-server.ts), over stdio (a child process per
 * client) and Streamable HTTP (one loopback server for the file).
 *
 * The SDK client cannot itself send the extension's wire shapes in
 * 2026-07-28, so the requester is given a raw dispatch, as its README asks:
 * here a small coordinator on the SDK transport that sends the requester's
 * JSON-RPC requests with its own ids and takes their responses off the
 * transport before the SDK client sees them. Everything else (the
 * notifications, the client's own calls) still reaches the SDK client.
 */
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Client, type JSONRPCMessage, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio"
import { Effect, Exit, Scope } from "effect"
import { NAME_FORM, serveHttp, SERVER_INFO } from "../fixtures/peers/our-task-server.ts"

/**
 * The part of `@modelcontextprotocol/ext-tasks/client` this test uses, typed here: the package's own
 * declarations do not type-check under this project's `exactOptionalPropertyTypes` without
 * `skipLibCheck`, so it is loaded through a computed specifier and not named to the compiler.
 */
interface JsonRpcResponse {
  readonly kind: "result" | "error"
  readonly result?: unknown
  readonly error?: unknown
}
type RawClientDispatch = (request: unknown, options?: { readonly signal?: AbortSignal }) => Promise<JsonRpcResponse>
interface TaskView {
  readonly taskId: string
  readonly status: string
}
type TaskOutcome = { readonly status: "completed"; readonly result: unknown } | { readonly status: "failed" | "cancelled" }
type TaskExecutionEvent = { readonly type: "task"; readonly task: TaskView } | { readonly type: "outcome"; readonly outcome: TaskOutcome }
interface ToolExecution {
  readonly kind: "immediate" | "task"
  readonly handle?: { readonly taskId: string }
  settle(options?: { readonly onEvent?: (event: TaskExecutionEvent) => void }): Promise<{ readonly outcome: TaskOutcome }>
  result(): Promise<TaskOutcome>
  cancel(): Promise<void>
}
interface TaskEnabledSession {
  readonly capabilities: Record<string, unknown>
  callTool(name: string, args?: Record<string, unknown>): Promise<ToolExecution>
  task(taskId: string): { snapshot(): Promise<TaskView> }
  close(): Promise<void>
}
type Answer<A> = (request: { readonly kind: string; readonly params: Record<string, unknown> }) => A | Promise<A>
interface RequesterApi {
  createTaskSessionFromClient(client: Client, options: {
    readonly endpointId: string
    readonly rawDispatch: RawClientDispatch
    readonly v2RequestFraming: { readonly protocolVersion: string; readonly clientInfo: object; readonly clientCapabilities: object }
    readonly onInputRequest: unknown
  }): TaskEnabledSession
  createApplicationInputHandler(callbacks: {
    readonly elicitation: Answer<{ readonly action: "accept" | "decline" | "cancel"; readonly content?: Record<string, string> }>
    readonly sampling: Answer<never>
    readonly roots: Answer<never>
  }): unknown
  resultFromTaskOutcome(outcome: TaskOutcome): unknown
  readonly TaskCancelledError: new(...args: Array<any>) => Error
}
const requesterModule = "@modelcontextprotocol/ext-tasks/client"
const { createApplicationInputHandler, createTaskSessionFromClient, resultFromTaskOutcome, TaskCancelledError } =
  (await import(requesterModule)) as RequesterApi

const fixture = fileURLToPath(new URL("../fixtures/peers/our-task-server.ts", import.meta.url))

const PROTOCOL = "2026-07-28"
const CLIENT_INFO = { name: "ext-tasks-peer", version: "0.2.2" }
const CLIENT_CAPABILITIES = { elicitation: { form: {} } }

interface RawTransport {
  onmessage?: ((message: JSONRPCMessage, ...rest: Array<any>) => void) | undefined
  send(message: JSONRPCMessage, ...rest: Array<any>): Promise<void>
}

/**
 * Sends requests on a connected SDK transport with ids of its own and hands
 * their responses back, passing every other message on to the SDK client.
 * `sent` records the methods it sent, in order.
 */
const rawDispatchOn = (transport: RawTransport, sent: Array<string>): RawClientDispatch => {
  const pending = new Map<string, (response: JsonRpcResponse) => void>()
  const deliver = transport.onmessage
  transport.onmessage = (message, ...rest) => {
    const id = (message as { id?: unknown }).id
    const settle = typeof id === "string" ? pending.get(id) : undefined
    if (settle !== undefined && ("result" in message || "error" in message)) {
      pending.delete(id as string)
      settle("error" in message ? { kind: "error", error: message.error } : { kind: "result", result: message.result })
      return
    }
    deliver?.(message, ...rest)
  }
  let next = 0
  return (request, options) =>
    new Promise((resolve, reject) => {
      const id = `requester-${++next}`
      const { method, params } = request as { method: string; params?: Record<string, unknown> }
      options?.signal?.addEventListener("abort", () => {
        pending.delete(id)
        reject(options.signal?.reason)
      }, { once: true })
      pending.set(id, resolve)
      sent.push(method)
      transport.send({ jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) } as JSONRPCMessage)
        .catch((e) => {
          pending.delete(id)
          reject(e)
        })
    })
}

interface Peer {
  readonly client: Client
  readonly session: TaskEnabledSession
  /** The methods the requester sent through its raw dispatch. */
  readonly sent: Array<string>
  /** The questions the requester's input handler was asked. */
  readonly asked: Array<string>
}

type Kind = "stdio" | "http"

let scope: Scope.Closeable
let httpUrl: string
beforeAll(async () => {
  scope = Effect.runSync(Scope.make())
  httpUrl = await Effect.runPromise(Scope.provide(serveHttp(), scope))
})
afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

const connect = async (kind: Kind): Promise<Peer> => {
  const client = new Client(CLIENT_INFO, {
    capabilities: CLIENT_CAPABILITIES,
    versionNegotiation: { mode: { pin: PROTOCOL } }
  })
  const transport = kind === "http"
    ? new StreamableHTTPClientTransport(new URL(httpUrl))
    : new StdioClientTransport({ command: process.execPath, args: [fixture, "--stdio"], stderr: "ignore" })
  await client.connect(transport)
  const sent: Array<string> = []
  const asked: Array<string> = []
  const session = createTaskSessionFromClient(client, {
    endpointId: `our-task-server-${kind}`,
    rawDispatch: rawDispatchOn(transport as unknown as RawTransport, sent),
    v2RequestFraming: { protocolVersion: PROTOCOL, clientInfo: CLIENT_INFO, clientCapabilities: CLIENT_CAPABILITIES },
    onInputRequest: createApplicationInputHandler({
      elicitation: (request) => {
        asked.push(String(request.params.message))
        return { action: "accept", content: { name: "Ada" } }
      },
      sampling: () => Promise.reject(new Error("not asked")),
      roots: () => Promise.reject(new Error("not asked"))
    })
  })
  return { client, session, sent, asked }
}

const withPeer = (kind: Kind, body: (peer: Peer) => Promise<void>) =>
  Effect.promise(async () => {
    const peer = await connect(kind)
    try {
      await body(peer)
    } finally {
      await peer.session.close()
      await peer.client.close()
    }
  })

const textOf = (result: unknown) =>
  ((result as { content?: ReadonlyArray<{ text?: string }> }).content ?? []).map((c) => c.text ?? "").join("")

for (const kind of ["stdio", "http"] as const) {
  describe.concurrent(`interop: the ext-tasks requester against our server over ${kind}`, { timeout: 120_000 }, () => {
    it.live("sees the extension declared", () =>
      withPeer(kind, async ({ client, session }) => {
        expect(client.getProtocolEra()).toBe("modern")
        expect(client.getServerVersion()).toMatchObject(SERVER_INFO)
        expect(session.capabilities).toMatchObject({ execution: true, cancellation: true, inputResponses: true })
        // In 2026-07-28 a tool does not say whether it runs as a task (the extension replaced `execution`):
        // the server decides per call, and the requester takes whichever result comes.
        const { tools } = await client.listTools()
        expect(tools.map((t) => t.execution)).toEqual(tools.map(() => undefined))
      }))

    it.live("creates a task and polls it to completion", () =>
      withPeer(kind, async ({ sent, session }) => {
        const execution = await session.callTool("report", { ms: 30 })
        expect(execution.kind).toBe("task")
        const events: Array<TaskExecutionEvent> = []
        const { outcome } = await execution.settle({ onEvent: (event) => void events.push(event) })
        expect(outcome.status).toBe("completed")
        expect(textOf(resultFromTaskOutcome(outcome))).toBe("report after 30 ms")
        // The first request created the task; the requester then followed it with tasks/get only.
        expect(sent[0]).toBe("tools/call")
        expect(new Set(sent.slice(1))).toEqual(new Set(["tasks/get"]))
        expect(events.at(-1)).toMatchObject({ type: "outcome", outcome: { status: "completed" } })
      }))

    it.live("answers input_required through tasks/update, once", () =>
      withPeer(kind, async ({ asked, sent, session }) => {
        const execution = await session.callTool("ask")
        expect(execution.kind).toBe("task")
        const statuses: Array<string> = []
        const { outcome } = await execution.settle({
          onEvent: (event) => void (event.type === "task" && statuses.push(event.task.status))
        })
        expect(textOf(resultFromTaskOutcome(outcome))).toBe("hello Ada")
        expect(asked).toEqual([NAME_FORM.message])
        expect(sent.filter((m) => m === "tasks/update")).toHaveLength(1)
        expect(statuses).toContain("input_required")
      }))

    it.live("cancels a task: tasks/cancel, the outcome cancelled, the handler interrupted", () =>
      withPeer(kind, async ({ client, sent, session }) => {
        const key = `ext-tasks-${kind}`
        const execution = await session.callTool("hang", { key })
        expect(execution.kind).toBe("task")
        expect(textOf(await client.callTool({ name: "await_hang", arguments: { key, state: "started" } }))).toBe(
          `${key}: started`
        )
        await execution.cancel()
        const outcome = await execution.result()
        expect(outcome.status).toBe("cancelled")
        expect(() => resultFromTaskOutcome(outcome)).toThrow(TaskCancelledError)
        expect(sent).toContain("tasks/cancel")
        expect(textOf(await client.callTool({ name: "await_hang", arguments: { key, state: "interrupted" } }))).toBe(
          `${key}: interrupted`
        )
        // Our server reports the task cancelled to a later tasks/get as well.
        expect((await session.task(execution.handle!.taskId).snapshot()).status).toBe("cancelled")
      }))
  })
}
