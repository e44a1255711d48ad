/**
 * The admission rules on their own, where the edges (bounds of Retry-After,
 * ties, reservations) are cheap to reach.
 */
import { describe, expect, it } from "@effect/vitest"
import * as SessionAdmission from "../../../src/server/http/SessionAdmission.ts"

interface S extends SessionAdmission.Slot {
  readonly name: string
  readonly busy: boolean
}

const slot = (name: string, principalId: string, lastActive: number, more: Partial<S> = {}): S => ({
  name,
  principalId,
  lastActive,
  createdAt: 0,
  initialized: true,
  busy: false,
  ...more
})

const holdings = (sessions: ReadonlyArray<S>, reserved: Record<string, number> = {}): SessionAdmission.Holdings<S> => ({
  total: sessions.length + Object.values(reserved).reduce((a, b) => a + b, 0),
  count: (p) => sessions.filter((s) => s.principalId === p).length + (reserved[p] ?? 0),
  all: () => sessions,
  of: (p) => sessions.filter((s) => s.principalId === p),
  isBusy: (s) => s.busy
})

const limits = (more: Partial<SessionAdmission.Limits> = {}): SessionAdmission.Limits => ({
  maxSessions: 3,
  maxSessionsPerPrincipal: undefined,
  handshakeTimeoutMs: 30_000,
  ...more
})

describe("SessionAdmission", () => {
  it("below the caps nothing is evicted", () => {
    expect(SessionAdmission.decide("a", holdings([slot("1", "a", 0)]), limits(), 0)).toEqual({ _tag: "Admit", evict: undefined })
  })

  it("sessions being created count against the caps and towards the principal's holdings", () => {
    const sessions = [slot("1", "a", 5), slot("2", "b", 1)]
    // b holds one plus one being made: more than a's one, so a may take b's idle session.
    const decision = SessionAdmission.decide("a", holdings(sessions, { b: 1 }), limits(), 10)
    expect(decision).toEqual({ _tag: "Admit", evict: sessions[1] })
    // Equal holdings: a recycles its own.
    expect(SessionAdmission.decide("a", holdings(sessions, { a: 1 }), limits(), 10)).toEqual({
      _tag: "Admit",
      evict: sessions[0]
    })
  })

  it("Retry-After: the soonest handshake deadline among the blocking sessions, at least 1 s, at most 30 s", () => {
    const busy = (name: string, createdAt: number, initialized: boolean) =>
      slot(name, "a", 0, { busy: true, createdAt, initialized })
    const refuse = (sessions: ReadonlyArray<S>, now: number, handshakeTimeout: number | "never" = 30_000) =>
      SessionAdmission.decide(
        "a",
        holdings(sessions),
        limits({ handshakeTimeoutMs: handshakeTimeout === "never" ? undefined : handshakeTimeout }),
        now
      )
    const retry = (seconds: number) => ({ _tag: "Refuse", reason: "server-full", retryAfterSeconds: seconds })
    expect(refuse([busy("1", 0, true), busy("2", 0, false), busy("3", 4_000, false)], 10_500)).toEqual(retry(20))
    // Past its deadline, waiting for a request to end: soon.
    expect(refuse([busy("1", 0, true), busy("2", 0, false), busy("3", 0, true)], 45_000)).toEqual(retry(1))
    // No handshake pending, or no handshake timeout: the bound.
    expect(refuse([busy("1", 0, true), busy("2", 0, true), busy("3", 0, true)], 1_000)).toEqual(retry(30))
    expect(refuse([busy("1", 0, true), busy("2", 0, false), busy("3", 0, true)], 1_000, "never")).toEqual(retry(30))
    // A deadline further away than the bound.
    expect(refuse([busy("1", 0, true), busy("2", 0, false), busy("3", 0, true)], 1_000, 120_000)).toEqual(retry(30))
  })

  it("a session the newcomer could not have evicted does not shorten its Retry-After", () => {
    const sessions = [
      slot("1", "a", 0, { busy: true }),
      slot("2", "b", 0, { busy: true }),
      // c holds no more than a: not a candidate, so its deadline is not a's.
      slot("3", "c", 0, { createdAt: 0, initialized: false, busy: true })
    ]
    expect(SessionAdmission.decide("a", holdings(sessions), limits(), 10_000)).toEqual({
      _tag: "Refuse",
      reason: "server-full",
      retryAfterSeconds: 30
    })
  })
})
