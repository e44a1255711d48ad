/**
 * The counting behind admission to one HTTP server transport: the sessions
 * it holds (by id, by kind, by principal, and those being made), which
 * SessionAdmission reads to decide who makes room at the caps; and the slots
 * of streams and requests, server-wide, per principal and per session.
 *
 * A request's slot is held until its handler ends, not only while its HTTP
 * exchange is open: a disconnect does not cancel the handler, so a slot freed
 * at the disconnect would let a client that posts and goes away in a loop
 * run any number of handlers.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as Latch from "effect/Latch"
import * as Scope from "effect/Scope"
import type * as SessionAdmission from "./SessionAdmission.ts"
import { isBusy, runInSessionUnsafe, type Session } from "./HttpSession.ts"

/** Which limit turned a request away: `maxStreams` (server-wide), `maxStreamsPerPrincipal` or `maxStreamsPerSession`. */
export type Refusal = "server-full" | "principal-full" | "session-full"

export type Admission = "ok" | Refusal

/** The slots `enterSlots` granted (up to the number asked for), and the limit that held back any others. */
export interface Grant {
  readonly granted: number
  readonly short: Refusal | undefined
  /**
   * Keeps the granted slots taken until `fiber` ends as well as the request
   * scope: the handlers a client started hold their slots after it goes away.
   */
  readonly holdUntilDoneUnsafe: (fiber: Fiber.Fiber<unknown, unknown>) => void
}

/** A grant and what gives its slots back (none to give when refused). */
export interface Entry {
  readonly grant: Grant
  readonly leave: Effect.Effect<void> | undefined
}

export interface Stats {
  readonly sessions: number
  readonly legacySessions: number
  readonly ephemeralSessions: number
  /** Slots held by HTTP exchanges still open: SSE streams and requests being answered. */
  readonly openStreams: number
  /**
   * Slots taken against `maxStreams`: `openStreams`, plus the requests whose
   * exchange ended (a disconnect, the legacy endpoint's 202) while their
   * handler still runs.
   */
  readonly slotsInUse: number
  readonly inFlight: number
  readonly work: number
  readonly storedEvents: number
  /** Bytes the sessions' resumable and standalone streams hold for their clients right now. */
  readonly bufferedBytes: number
  /** SSE connections dropped so far because their client fell too far behind (broadcast listeners aside). */
  readonly streamsDropped: number
  /** Handlers running for stateless-era requests (each ends with its HTTP exchange at the latest). */
  readonly statelessRequests: number
}

/** The sessions held, indexed for lookups and for admission. */
export interface Registry {
  readonly sessions: Map<string, Session>
  readonly legacy: Map<string, Session>
  readonly ephemeral: Set<Session>
  readonly hold: (session: Session) => void
  /** Takes the session out of every index at once, so no one else picks it; false if it was already out. */
  readonly detach: (session: Session) => boolean
  /** What SessionAdmission reads: the sessions held and those being made. */
  readonly holdings: SessionAdmission.Holdings<Session>
  /** Counts (1) or stops counting (-1) a session of the principal's being made. */
  readonly reserve: (principalId: string, by: 1 | -1) => void
}

export const makeRegistry = (): Registry => {
  const sessions = new Map<string, Session>()
  const legacy = new Map<string, Session>()
  const ephemeral = new Set<Session>()
  // Streamable and legacy sessions by principal, and the slots taken by sessions being made.
  const byPrincipal = new Map<string, Set<Session>>()
  const reserved = new Map<string, number>()
  let reservedTotal = 0

  const hold = (session: Session) => {
    if (session.id === undefined) {
      ephemeral.add(session)
      return
    }
    if (session.kind === "legacy") legacy.set(session.id, session)
    else sessions.set(session.id, session)
    let held = byPrincipal.get(session.principalId)
    if (held === undefined) byPrincipal.set(session.principalId, held = new Set())
    held.add(session)
  }

  const detach = (session: Session): boolean => {
    if (session.closed) return false
    session.closed = true
    ephemeral.delete(session)
    if (session.id === undefined) return true
    if (session.kind === "legacy") legacy.delete(session.id)
    else sessions.delete(session.id)
    const held = byPrincipal.get(session.principalId)
    held?.delete(session)
    if (held?.size === 0) byPrincipal.delete(session.principalId)
    return true
  }

  const holdings: SessionAdmission.Holdings<Session> = {
    get total() {
      return sessions.size + legacy.size + reservedTotal
    },
    count: (principalId) => (byPrincipal.get(principalId)?.size ?? 0) + (reserved.get(principalId) ?? 0),
    all: () => [...sessions.values(), ...legacy.values()],
    of: (principalId) => byPrincipal.get(principalId) ?? [],
    isBusy
  }

  const reserve = (principalId: string, by: 1 | -1) => {
    reservedTotal += by
    const n = (reserved.get(principalId) ?? 0) + by
    if (n === 0) reserved.delete(principalId)
    else reserved.set(principalId, n)
  }

  return { sessions, legacy, ephemeral, hold, detach, holdings, reserve }
}

export interface StreamLimits {
  readonly maxStreams: number
  readonly maxStreamsPerPrincipal: number | undefined
  readonly maxStreamsPerSession: number
}

/** The slots of streams and requests taken, and the way to take them. */
export interface StreamSlots {
  /**
   * Counts the request (and, with `stream`, a slot of the principal's and the
   * session's, if any) until the current request scope closes.
   */
  readonly enter: (
    principalId: string,
    session: Session | undefined,
    stream: boolean
  ) => Effect.Effect<Admission, never, Scope.Scope>
  /**
   * `enter` for a POST that answers `wanted` requests (a batch): takes as many
   * slots as are free, up to `wanted`, until the request scope closes (or,
   * see `Grant.holdUntilDoneUnsafe`, later). None granted (while some were wanted)
   * means refused: nothing is counted.
   */
  readonly enterSlots: (
    principalId: string,
    session: Session | undefined,
    wanted: number
  ) => Effect.Effect<Grant, never, Scope.Scope>
  /**
   * `enterSlots` as plain code, for a caller that holds the request's scope
   * and clock already: `leave` (absent when refused) is for that scope to run
   * when it closes.
   */
  readonly enterSlotsUnsafe: (
    principalId: string,
    session: Session | undefined,
    wanted: number,
    clock: Clock.Clock
  ) => Entry
  /** Slots held by HTTP exchanges still open (see `Stats.openStreams`). */
  readonly openStreams: () => number
  /** Slots taken against `maxStreams` (see `Stats.slotsInUse`). */
  readonly slotsInUse: () => number
  /** Completes when no request is being answered and no stream is open. */
  readonly awaitNoStreams: Effect.Effect<void>
}

export const makeStreamSlots = (config: StreamLimits): StreamSlots => {
  let openStreams = 0
  let slotsInUse = 0
  const principalSlots = new Map<string, number>()
  // Open while no stream is open: shutdown waits on it so connections are idle before the listener closes.
  const noStreams = Latch.makeUnsafe(true)

  // Slots are counted per principal only where a per-principal limit reads the count.
  const perPrincipal = config.maxStreamsPerPrincipal !== undefined
  const takeSlots = (principalId: string, session: Session | undefined, n: number) => {
    slotsInUse += n
    if (perPrincipal) {
      const held = (principalSlots.get(principalId) ?? 0) + n
      if (held === 0) principalSlots.delete(principalId)
      else principalSlots.set(principalId, held)
    }
    if (session !== undefined) session.slots += n
  }

  const refusedGrant = (short: Refusal | undefined): Grant => ({ granted: 0, short, holdUntilDoneUnsafe: () => {} })

  const enterSlotsUnsafe = (
    principalId: string,
    session: Session | undefined,
    wanted: number,
    clock: Clock.Clock
  ): Entry => {
    const serverFree = config.maxStreams - slotsInUse
    const principalFree = config.maxStreamsPerPrincipal === undefined
      ? Number.POSITIVE_INFINITY
      : config.maxStreamsPerPrincipal - (principalSlots.get(principalId) ?? 0)
    const sessionFree = session === undefined ? Number.POSITIVE_INFINITY : config.maxStreamsPerSession - session.slots
    const free = Math.min(serverFree, principalFree, sessionFree)
    const granted = Math.max(0, Math.min(wanted, free))
    // On a tie the wider limit is named: the server's, then the principal's.
    const short: Refusal | undefined = granted === wanted
      ? undefined
      : free === serverFree
      ? "server-full"
      : free === principalFree
      ? "principal-full"
      : "session-full"
    if (wanted > 0 && granted === 0) return { grant: refusedGrant(short), leave: undefined }
    if (granted > 0) {
      if (openStreams === 0) noStreams.closeUnsafe()
      openStreams += granted
      takeSlots(principalId, session, granted)
    }
    if (session !== undefined) {
      session.active++
      session.lastActive = clock.currentTimeMillisUnsafe()
    }
    // The request scope holds the slots, and so does each fiber handed to `holdUntilDoneUnsafe`; the last one out frees them.
    let holders = 1
    const release = () => {
      if (--holders === 0) takeSlots(principalId, session, -granted)
    }
    const holdUntilDoneUnsafe = (fiber: Fiber.Fiber<unknown, unknown>) => {
      if (holders === 0 || granted === 0) return
      holders++
      fiber.addObserver(release)
    }
    return {
      grant: { granted, short, holdUntilDoneUnsafe },
      leave: Effect.sync(() => {
        if (granted > 0) {
          openStreams -= granted
          if (openStreams === 0) noStreams.openUnsafe()
          release()
        }
        if (session === undefined) return
        session.active--
        session.lastActive = clock.currentTimeMillisUnsafe()
      })
    }
  }

  const enterSlots = (
    principalId: string,
    session: Session | undefined,
    wanted: number
  ): Effect.Effect<Grant, never, Scope.Scope> =>
    Effect.withFiber((fiber) => enterSlotsThen(enterSlotsUnsafe, fiber, principalId, session, wanted, Effect.succeed))

  const enter = (principalId: string, session: Session | undefined, stream: boolean) =>
    Effect.map(enterSlots(principalId, session, stream ? 1 : 0), (grant): Admission => grant.short ?? "ok")

  return {
    enter,
    enterSlots,
    enterSlotsUnsafe,
    openStreams: () => openStreams,
    slotsInUse: () => slotsInUse,
    awaitNoStreams: noStreams.await
  }
}

/**
 * `enterSlots` from inside a step of `fiber` (the request's, which holds its
 * scope), then `next` with the grant, in the step that takes the slots.
 */
export const enterSlotsThen = <A, E, R>(
  enterSlotsUnsafe: StreamSlots["enterSlotsUnsafe"],
  fiber: Fiber.Fiber<unknown, unknown>,
  principalId: string,
  session: Session | undefined,
  wanted: number,
  next: (grant: Grant) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> => {
  // The slots' way out is registered first and they are taken in the step that reads the registration:
  // no step in between where the scope could close on slots it does not release.
  let leave: Effect.Effect<void> | undefined
  return Effect.flatMap(
    Scope.addFinalizerExit(Context.getUnsafe(fiber.context, Scope.Scope), () => leave ?? Effect.void),
    () => {
      const entry = enterSlotsUnsafe(principalId, session, wanted, fiber.getRef(Clock.Clock))
      leave = entry.leave
      return next(entry.grant)
    }
  )
}

/**
 * Runs work in the session (`runInSessionUnsafe`), the grant's slots held
 * until it ends too. One step, so a client going away meanwhile cannot
 * leave work running without its slots.
 */
export const runHoldingSlots = <A, E>(
  session: Session,
  grant: Grant,
  effect: Effect.Effect<A, E>
): Effect.Effect<Fiber.Fiber<A, E>> =>
  Effect.withFiber((parent) => Effect.succeed(runHoldingSlotsUnsafe(parent, session, grant, effect)))

/** `runHoldingSlots` as plain code, for a caller running in `parent`'s step. */
export const runHoldingSlotsUnsafe = <A, E>(
  parent: Fiber.Fiber<unknown, unknown>,
  session: Session,
  grant: Grant,
  effect: Effect.Effect<A, E>
): Fiber.Fiber<A, E> => {
  const fiber = runInSessionUnsafe(parent, session, effect)
  grant.holdUntilDoneUnsafe(fiber)
  return fiber
}
