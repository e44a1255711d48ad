/**
 * The bench's own MCP client over node:http (no library between the
 * measurement and the wire): stateless-era calls, handshake-era sessions,
 * and SSE read event by event with the arrival time of each.
 */
import { type Agent, type IncomingMessage, request } from "node:http"
import { monotonicMs } from "./protocol.ts"

export const STATELESS = "2026-07-28"
export const HANDSHAKE = "2025-11-25"

const CLIENT_INFO = { name: "bench-fleet", version: "1.0.0" }


export interface SseEvent {
  readonly id: string | undefined
  readonly data: string
  /** `monotonicMs()` when the event's last byte was read. */
  readonly at: number
}

/** Feeds chunks of an SSE body, calls `onEvent` per complete event (comments and data-less events skipped). */
export const sseParser = (onEvent: (event: SseEvent) => void) => {
  let buffer = ""
  return (chunk: string) => {
    buffer += chunk
    let end: number
    while ((end = buffer.search(/\r?\n\r?\n/)) !== -1) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + (buffer[end] === "\r" ? 4 : 2))
      let id: string | undefined
      const data: Array<string> = []
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith("id:")) id = line.slice(3).trim()
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""))
      }
      if (data.length > 0 || id !== undefined) onEvent({ id, data: data.join("\n"), at: monotonicMs() })
    }
  }
}

export interface Answer {
  readonly status: number
  readonly headers: IncomingMessage["headers"]
  /** Every JSON-RPC message of the body (one for JSON, each event's for SSE). */
  readonly messages: ReadonlyArray<Record<string, any>>
  readonly events: ReadonlyArray<SseEvent>
}

/** One POST; resolves once the body ended. */
export const post = (
  url: string,
  agent: Agent,
  body: object,
  headers: Record<string, string>
): Promise<Answer> => {
  const text = JSON.stringify(body)
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: "POST",
      agent,
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "content-length": String(Buffer.byteLength(text)),
        ...headers
      }
    }, (res) => {
      const sse = res.headers["content-type"]?.startsWith("text/event-stream") === true
      const events: Array<SseEvent> = []
      const feed = sseParser((event) => events.push(event))
      let raw = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => (sse ? feed(chunk) : (raw += chunk)))
      res.on("error", reject)
      res.on("end", () => {
        try {
          const messages = sse
            ? events.filter((e) => e.data !== "").map((e) => JSON.parse(e.data))
            : raw === "" ? [] : [JSON.parse(raw)]
          resolve({ status: res.statusCode ?? 0, headers: res.headers, messages, events })
        } catch (error) {
          reject(new Error(`unreadable answer (${res.statusCode}): ${raw.slice(0, 300)}: ${String(error)}`))
        }
      })
    })
    req.on("error", reject)
    req.end(text)
  })
}

let nextId = 0

export const resultOf = (answer: Answer): Record<string, any> => {
  const reply = answer.messages.find((m) => "result" in m || "error" in m)
  if (reply?.result === undefined) {
    throw new Error(`unexpected answer ${answer.status}: ${JSON.stringify(answer.messages).slice(0, 300)}`)
  }
  return reply.result
}

/** A stateless-era `tools/call`; `refused` when the instance had no free slot (503 or 429). */
export const statelessCall = async (
  url: string,
  agent: Agent,
  name: string,
  args: object
): Promise<{ readonly refused: true } | { readonly refused: false; readonly result: Record<string, any> }> => {
  const answer = await post(url, agent, {
    jsonrpc: "2.0",
    id: ++nextId,
    method: "tools/call",
    params: {
      name,
      arguments: args,
      _meta: {
        "io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO
      }
    }
  }, { "mcp-protocol-version": STATELESS, "mcp-method": "tools/call", "mcp-name": name })
  if (answer.status === 503 || answer.status === 429) return { refused: true }
  return { refused: false, result: resultOf(answer) }
}

export interface Session {
  readonly id: string
  readonly headers: Record<string, string>
}

/** `initialize` and `notifications/initialized` of a handshake-era session (the latter to `ackUrl`, default the same). */
export const openSession = async (url: string, agent: Agent, ackUrl = url): Promise<Session> => {
  const init = await post(url, agent, {
    jsonrpc: "2.0",
    id: ++nextId,
    method: "initialize",
    params: { protocolVersion: HANDSHAKE, capabilities: {}, clientInfo: CLIENT_INFO }
  }, {})
  resultOf(init)
  const id = init.headers["mcp-session-id"]
  if (typeof id !== "string") throw new Error(`initialize answered ${init.status} without a session`)
  const headers = { "mcp-session-id": id, "mcp-protocol-version": HANDSHAKE }
  const ack = await post(ackUrl, agent, { jsonrpc: "2.0", method: "notifications/initialized" }, headers)
  if (ack.status !== 202) throw new Error(`notifications/initialized answered ${ack.status}`)
  return { id, headers }
}

/** A request in a session; `progress` asks for progress notifications (a token is sent). */
export const sessionCall = (
  url: string,
  agent: Agent,
  session: Session,
  method: string,
  params: Record<string, unknown>,
  progress = false
): Promise<Answer> => {
  const id = ++nextId
  return post(url, agent, {
    jsonrpc: "2.0",
    id,
    method,
    params: progress ? { ...params, _meta: { progressToken: `p${id}` } } : params
  }, session.headers)
}

/** DELETE of a session (its log goes with it). */
export const closeSession = (url: string, agent: Agent, session: Session): Promise<number> =>
  new Promise((resolve, reject) => {
    const req = request(url, { method: "DELETE", agent, headers: session.headers }, (res) => {
      res.resume()
      res.on("end", () => resolve(res.statusCode ?? 0))
    })
    req.on("error", reject)
    req.end()
  })

export interface OpenStream {
  /** The status of the GET's answer, once its headers arrived. */
  readonly status: Promise<number>
  /** Resolves when the stream ends, however it ends (closed, cut, refused). */
  readonly ended: Promise<void>
  readonly close: () => void
}

/** The session's GET stream (resumed after `lastEventId` when given), each event handed to `onEvent` as it arrives. */
export const openGetStream = (
  url: string,
  session: Session,
  lastEventId: string | undefined,
  onEvent: (event: SseEvent) => void
): OpenStream => {
  let setStatus: (status: number) => void = () => {}
  const status = new Promise<number>((resolve) => (setStatus = resolve))
  let close: () => void = () => {}
  const ended = new Promise<void>((resolve) => {
    const req = request(url, {
      method: "GET",
      agent: false,
      headers: {
        accept: "text/event-stream",
        ...session.headers,
        ...(lastEventId === undefined ? {} : { "last-event-id": lastEventId })
      }
    }, (res) => {
      setStatus(res.statusCode ?? 0)
      const feed = sseParser(onEvent)
      res.setEncoding("utf8")
      res.on("data", feed)
      res.on("error", () => resolve())
      res.on("close", () => resolve())
      res.on("end", () => resolve())
    })
    req.on("error", () => {
      setStatus(0)
      resolve()
    })
    req.end()
    close = () => req.destroy()
  })
  return { status, ended, close }
}
