/**
 * Where the messages of one handshake-era POST go: the replies of its
 * requests and what their handlers send the client on the way. Its response
 * stream is made on first use (`out`, read by the session's `sendFor` and
 * `closeSseStream`), or up front with `open`; a reply given before any
 * stream opened is kept as the POST's direct answer.
 */
import * as Effect from "effect/Effect"
import type * as JsonRpc from "../../JsonRpc.ts"
import { TransportClosed } from "../../McpError.ts"
import type { LeaseLost } from "../InstanceLease.ts"
import type { OutStream } from "./OutStream.ts"
import * as OwedReplies from "./OwedReplies.ts"
import type { RequestRoute, Session, Sessions } from "./Sessions.ts"
import { WakeOnce } from "./WakeOnce.ts"

export const isInitialize = (m: JsonRpc.Classified) => m._tag === "Request" && m.message.method === "initialize"

export const negotiatedVersion = (reply: JsonRpc.JsonRpcResponse): string | undefined => {
  if (!("result" in reply)) return undefined
  const v = (reply.result as { protocolVersion?: unknown } | null)?.protocolVersion
  return typeof v === "string" ? v : undefined
}

export class PostRoute implements RequestRoute {
  opened: OutStream | undefined = undefined
  /** The answer of a lazy exchange whose stream never opened. */
  direct: JsonRpc.JsonRpcResponse | undefined = undefined
  /**
   * Whether an initialize got its result (not `Session.initialized`, the
   * client's `initialized`): until then, no answer may carry the session's id.
   */
  initializeSucceeded = false
  /** See `RequestRoute.opening`: undefined once done. */
  opening: Effect.Effect<boolean, TransportClosed> | undefined = undefined
  /** Woken when the stream opens or the work ends without it. */
  readonly #settled = new WakeOnce()
  readonly canStream: boolean
  readonly #sessions: Sessions
  readonly #session: Session
  readonly #resumable: boolean
  readonly #streamId: string | undefined
  // The ids of the replies offered to the stream, which a failed work reads to know what it still owes:
  // the first apart, so that a POST of one request pays for no array.
  #replies = 0
  #firstReply: JsonRpc.RequestId | null = null
  #moreReplies: Array<JsonRpc.RequestId | null> | undefined = undefined
  constructor(canStream: boolean, sessions: Sessions, session: Session, resumable: boolean, streamId?: string) {
    this.canStream = canStream
    this.#sessions = sessions
    this.#session = session
    this.#resumable = resumable
    this.#streamId = streamId
  }
  get out(): OutStream {
    return this.open()
  }
  /**
   * Has `record` run before the stream first opens (once it succeeded, it
   * is not run again); refused, the handler's message fails as on a closed
   * stream and the stream stays shut.
   */
  recordBeforeOpening(record: Effect.Effect<void, LeaseLost>): void {
    this.opening = Effect.matchEffect(record, {
      onFailure: (lost) => Effect.fail(new TransportClosed({ reason: lost.message })),
      onSuccess: () => {
        this.opening = undefined
        return Effect.succeed(this.direct === undefined)
      }
    })
  }
  open(): OutStream {
    if (this.opened === undefined) {
      this.opened = this.#sessions.openStream(this.#session, this.#resumable, this.#streamId)
      this.settle()
    }
    return this.opened
  }
  /** A reply: the stream's if one opened, else the direct answer. */
  deliver(reply: JsonRpc.JsonRpcResponse): Effect.Effect<unknown> {
    if (this.opened === undefined) {
      this.direct = reply
      return Effect.void
    }
    this.replied(reply.id)
    return this.opened.offer(reply)
  }
  /** The reply (`null`: none) to `m`, delivered; an initialize's also sets the session's revision. */
  delivered(m: JsonRpc.Classified, reply: JsonRpc.JsonRpcResponse | null): Effect.Effect<unknown> {
    if (reply === null) return Effect.void
    if (isInitialize(m)) {
      this.#session.protocolVersion = negotiatedVersion(reply)
      this.initializeSucceeded = "result" in reply
    }
    return this.deliver(reply)
  }
  /** A reply with this id went into the stream. */
  replied(id: JsonRpc.RequestId | null): void {
    if (this.#replies++ === 0) this.#firstReply = id
    else (this.#moreReplies ??= []).push(id)
  }
  /** The ids of `messages` owed a reply that the stream got none for, in the POST's order. */
  unanswered(messages: ReadonlyArray<JsonRpc.Classified>): Array<JsonRpc.RequestId | null> {
    const ids = this.#replies === 0 ? [] : [this.#firstReply, ...(this.#moreReplies ?? [])]
    return OwedReplies.unansweredOnStream(messages, ids)
  }
  /** Wakes `openedOrAnswered`: the stream opened, or the work ended without it. */
  settle(): void {
    this.#settled.wake()
  }
  /** The stream opened, or the work ended without it. */
  get settled(): boolean {
    return this.#settled.woken
  }
  get openedOrAnswered(): Effect.Effect<void> {
    return this.#settled.await
  }
}
