/**
 * The inboxes of a fleet's instances: how a message reaches the one
 * instance it is for. A request the server sent a client (an elicitation, a
 * sampling request) waits on the instance that asked; the client may POST
 * its answer to any instance, which puts the answer in the asking
 * instance's inbox, and that instance delivers it to the session's pending
 * request.
 *
 * An instance's id is in the id of every request it asks a client
 * (`<instanceId>:<n>`), so whichever instance gets the answer knows where it
 * goes. Without the service, requests to clients are answered on the
 * instance that asked, as they always were.
 */
import { randomBytes } from "node:crypto"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"

/**
 * A message for a session held on another instance.
 *
 * @since 0.1.0
 * @category models
 */
export interface InboxEntry {
  readonly sessionId: string
  /** The JSON-RPC message, as JSON. */
  readonly message: string
}

/**
 * The inboxes could not be reached.
 *
 * @since 0.1.0
 * @category errors
 */
export class InboxUnavailable extends Data.TaggedError("InboxUnavailable")<{
  readonly instanceId: string
  readonly cause: unknown
}> {
  override get message(): string {
    return `Inbox unavailable (instance ${this.instanceId})`
  }
}

/**
 * What an inbox does.
 *
 * @since 0.1.0
 * @category models
 */
export interface InboxShape {
  /** This instance's id: the prefix of the ids of the requests it sends clients. */
  readonly instanceId: string
  /** Puts `entry` in the inbox of instance `instanceId`; false when no such instance is reading (it is gone). */
  readonly send: (instanceId: string, entry: InboxEntry) => Effect.Effect<boolean, InboxUnavailable>
  /**
   * Reads this instance's inbox until the scope closes, running `onEntry`
   * for each entry, in order, once. A failure of `onEntry` is its own: the
   * reading goes on. Reading starts (the inbox exists) before this returns.
   */
  readonly receive: (onEntry: (entry: InboxEntry) => Effect.Effect<void>) => Effect.Effect<void, never, Scope.Scope>
}

/**
 * The inboxes as a service: the HTTP server transport uses it when present.
 *
 * @since 0.1.0
 * @category services
 */
export class Inbox extends Context.Service<Inbox, InboxShape>()("effect-mcp-transport/Inbox") {}

/**
 * A fresh instance id: 12 characters of base64url (no `:`, so it can head a request id).
 *
 * @since 0.1.0
 * @category constructors
 */
export const randomInstanceId = (): string => randomBytes(9).toString("base64url")

/**
 * The instance a request id names (`<instanceId>:<n>`), if it names one.
 *
 * @since 0.1.0
 * @category utils
 */
export const instanceOf = (id: unknown): string | undefined => {
  if (typeof id !== "string") return undefined
  const at = id.indexOf(":")
  return at > 0 ? id.slice(0, at) : undefined
}
