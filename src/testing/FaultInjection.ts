/**
 * A controllable fault plan for the in-memory link: drop, delay, duplicate,
 * reorder, corrupt or truncate frames, cut the link (a silent partition) or
 * kill the server, on command or at random from a replay key. For property tests of
 * whatever sits above a `ClientTransport`: every request must still settle
 * exactly once, whatever the wire does.
 *
 * Faults act on whole frames (JSON text). Corruption always yields text that
 * is not JSON, and truncation a strict prefix, so a damaged frame is never
 * mistaken for another valid message.
 */
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as InMemoryTransport from "../bridge/InMemoryTransport.ts"
import type { Handler } from "../server/Handler.ts"

export type Direction = InMemoryTransport.Direction

export type Fault = Data.TaggedEnum<{
  /** The frame is lost. */
  Drop: {}
  /** The frame arrives `millis` later (frames behind it may overtake it). */
  Delay: { readonly millis: number }
  /** The frame arrives twice. */
  Duplicate: {}
  /** The frame is held back and arrives right after the next frame in the same direction that is not held. */
  Reorder: {}
  /** A control character is inserted, so the frame is no longer JSON. */
  Corrupt: {}
  /** Only a strict prefix of the frame arrives. */
  Truncate: {}
  /** The link goes silent both ways from this frame on (a partition); `heal` ends it. */
  Cut: {}
  /** The server dies as this frame is sent; the frame is lost. */
  Kill: {}
}>
export const Fault = Data.taggedEnum<Fault>()

export type FaultKind = Fault["_tag"]

/** Per-frame probabilities (0..1) for random mode; at most one fault applies to a frame. */
export interface RandomFaults {
  /** Fixes the random sequence: the same key and the same traffic give the same faults. */
  readonly replayKey: number | string
  readonly drop?: number | undefined
  readonly delay?: number | undefined
  /** Upper bound of a random delay. Default 100 ms. */
  readonly maxDelayMs?: number | undefined
  readonly duplicate?: number | undefined
  readonly reorder?: number | undefined
  readonly corrupt?: number | undefined
  readonly truncate?: number | undefined
  readonly cut?: number | undefined
  readonly kill?: number | undefined
  /** Directions that get random faults. Default both. */
  readonly directions?: ReadonlyArray<Direction> | undefined
}

export interface FaultInjectionConfig {
  /** Random faults from a replay key; commands still take precedence. Off when absent. */
  readonly random?: RandomFaults | undefined
}

export interface NextOptions {
  /** Which direction's next frame gets the fault. Default: whichever comes first. */
  readonly direction?: Direction | undefined
  /** Only a frame whose parsed JSON satisfies this gets the fault (frames that are not JSON never match). */
  readonly match?: ((message: unknown) => boolean) | undefined
}

/** What happened to one frame, for assertions and for reading a failing property's story. */
export interface FaultEvent {
  readonly direction: Direction
  readonly fault: FaultKind | "Deliver" | "Partitioned"
  /** The frame, cut to 120 characters. */
  readonly text: string
}

export type FaultStats = { readonly [K in FaultKind | "Deliver" | "Partitioned"]: number }

export interface FaultInjector {
  /** Plug into `InMemoryTransport.makePair(handler, { interceptor })`. */
  readonly interceptor: InMemoryTransport.WireInterceptor
  /** Applies `fault` to the next matching frame. Commands apply in the order given. */
  readonly next: (fault: Fault, options?: NextOptions) => Effect.Effect<void>
  readonly dropNext: (options?: NextOptions) => Effect.Effect<void>
  readonly delayNext: (delay: Duration.Input, options?: NextOptions) => Effect.Effect<void>
  readonly duplicateNext: (options?: NextOptions) => Effect.Effect<void>
  readonly reorderNext: (options?: NextOptions) => Effect.Effect<void>
  readonly corruptNext: (options?: NextOptions) => Effect.Effect<void>
  readonly truncateNext: (options?: NextOptions) => Effect.Effect<void>
  /** Partitions the link now: nothing crosses in either direction until `heal`. */
  readonly cut: Effect.Effect<void>
  readonly heal: Effect.Effect<void>
  /** Kills the server now: the client closes with `TransportClosed` ("server killed by fault injection"). */
  readonly kill: Effect.Effect<void>
  /** Turns random mode on (with a new plan) or off. */
  readonly setRandom: (random: RandomFaults | undefined) => Effect.Effect<void>
  readonly stats: Effect.Effect<FaultStats>
  /** The last 1000 frame events, oldest first. */
  readonly events: Effect.Effect<ReadonlyArray<FaultEvent>>
}

/** mulberry32: small, fast and good enough to drive a fault plan reproducibly. */
const prng = (replayKey: number | string): () => number => {
  let h = 2166136261
  const s = String(replayKey)
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619)
  let a = h >>> 0
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** U+0001 is neither JSON whitespace nor allowed raw in a string, so the result never parses. */
const corrupt = (text: string, random: () => number): string => {
  const at = Math.floor(random() * (text.length + 1))
  return text.slice(0, at) + "\u0001" + text.slice(at)
}

/** A strict prefix of a JSON object or array is never JSON (the empty prefix is a blank line, skipped). */
const truncate = (text: string, random: () => number): string => text.slice(0, Math.floor(random() * text.length))

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

interface Command {
  readonly fault: Fault
  readonly direction: Direction | undefined
  readonly match: ((message: unknown) => boolean) | undefined
}

const KINDS: ReadonlyArray<FaultKind | "Deliver" | "Partitioned"> = [
  "Deliver",
  "Partitioned",
  "Drop",
  "Delay",
  "Duplicate",
  "Reorder",
  "Corrupt",
  "Truncate",
  "Cut",
  "Kill"
]

export const make = Effect.fnUntraced(function*(
  config: FaultInjectionConfig = {}
): Effect.fn.Return<FaultInjector, never, Scope.Scope> {
  const scope = yield* Effect.scope
  const commands: Array<Command> = []
  let random: RandomFaults | undefined = config.random
  let rng = random === undefined ? Math.random : prng(random.replayKey)
  let partitioned = false
  let controls: InMemoryTransport.WireControls | undefined
  const held: Record<Direction, Array<{ readonly text: string; readonly deliver: (text: string) => Effect.Effect<void> }>> = {
    "client-to-server": [],
    "server-to-client": []
  }
  const counts = Object.fromEntries(KINDS.map((k) => [k, 0])) as Record<FaultKind | "Deliver" | "Partitioned", number>
  const log: Array<FaultEvent> = []

  const record = (direction: Direction, fault: FaultEvent["fault"], text: string) => {
    counts[fault]++
    log.push({ direction, fault, text: text.length > 120 ? text.slice(0, 120) + "…" : text })
    if (log.length > 1000) log.shift()
  }

  const takeCommand = (direction: Direction, text: string): Fault | undefined => {
    let parsed: unknown
    let didParse = false
    for (let i = 0; i < commands.length; i++) {
      const c = commands[i]!
      if (c.direction !== undefined && c.direction !== direction) continue
      if (c.match !== undefined) {
        if (!didParse) {
          parsed = parse(text)
          didParse = true
        }
        if (parsed === undefined || !c.match(parsed)) continue
      }
      commands.splice(i, 1)
      return c.fault
    }
    return undefined
  }

  const draw = (direction: Direction): Fault | undefined => {
    const r = random
    if (r === undefined || (r.directions !== undefined && !r.directions.includes(direction))) return undefined
    let x = rng()
    const pick = (p: number | undefined): boolean => {
      if (p === undefined || p <= 0) return false
      if (x < p) return true
      x -= p
      return false
    }
    if (pick(r.drop)) return Fault.Drop()
    if (pick(r.delay)) return Fault.Delay({ millis: Math.floor(rng() * (r.maxDelayMs ?? 100)) + 1 })
    if (pick(r.duplicate)) return Fault.Duplicate()
    if (pick(r.reorder)) return Fault.Reorder()
    if (pick(r.corrupt)) return Fault.Corrupt()
    if (pick(r.truncate)) return Fault.Truncate()
    if (pick(r.cut)) return Fault.Cut()
    if (pick(r.kill)) return Fault.Kill()
    return undefined
  }

  /** Lets the frames held by Reorder through, right after the frame that overtook them. */
  const releaseHeld = (direction: Direction): Effect.Effect<void> => {
    const frames = held[direction].splice(0)
    return Effect.forEach(frames, (h) =>
      Effect.suspend(() => {
        if (!partitioned) return h.deliver(h.text)
        record(direction, "Partitioned", h.text)
        return Effect.void
      }), { discard: true })
  }

  const apply = (
    direction: Direction,
    text: string,
    deliver: (text: string) => Effect.Effect<void>
  ): Effect.Effect<void> => {
    if (partitioned) {
      record(direction, "Partitioned", text)
      return Effect.void
    }
    const fault = takeCommand(direction, text) ?? draw(direction)
    if (fault === undefined) {
      record(direction, "Deliver", text)
      return deliver(text)
    }
    record(direction, fault._tag, text)
    switch (fault._tag) {
      case "Drop":
        return Effect.void
      case "Delay":
        return Effect.sleep(Duration.millis(fault.millis)).pipe(
          Effect.andThen(Effect.suspend(() => partitioned ? Effect.void : deliver(text))),
          Effect.forkIn(scope),
          Effect.asVoid
        )
      case "Duplicate":
        return Effect.andThen(deliver(text), deliver(text))
      case "Reorder":
        held[direction].push({ text, deliver })
        return Effect.void
      case "Corrupt":
        return deliver(corrupt(text, rng))
      case "Truncate":
        return deliver(truncate(text, rng))
      case "Cut":
        partitioned = true
        return Effect.void
      case "Kill":
        return controls === undefined ? Effect.void : controls.killServer("server killed by fault injection")
    }
  }

  const interceptor: InMemoryTransport.WireInterceptor = {
    transmit: (direction, text, deliver) =>
      Effect.suspend(() => {
        const holding = held[direction].length
        // The decision is made now; only delivery is deferred to the returned effect.
        const effect = apply(direction, text, deliver)
        const heldThisOne = held[direction].length > holding
        return holding === 0 || heldThisOne ? effect : Effect.andThen(effect, releaseHeld(direction))
      }),
    attach: (c) => Effect.sync(() => void (controls = c))
  }

  const next = (fault: Fault, options?: NextOptions) =>
    Effect.sync(() => void commands.push({ fault, direction: options?.direction, match: options?.match }))

  return {
    interceptor,
    next,
    dropNext: (o) => next(Fault.Drop(), o),
    delayNext: (d, o) => next(Fault.Delay({ millis: Duration.toMillis(Duration.fromInputUnsafe(d)) }), o),
    duplicateNext: (o) => next(Fault.Duplicate(), o),
    reorderNext: (o) => next(Fault.Reorder(), o),
    corruptNext: (o) => next(Fault.Corrupt(), o),
    truncateNext: (o) => next(Fault.Truncate(), o),
    cut: Effect.sync(() => void (partitioned = true)),
    heal: Effect.sync(() => void (partitioned = false)),
    kill: Effect.suspend(() => controls === undefined ? Effect.void : controls.killServer("server killed by fault injection")),
    setRandom: (r) =>
      Effect.sync(() => {
        random = r
        rng = r === undefined ? Math.random : prng(r.replayKey)
      }),
    stats: Effect.sync(() => ({ ...counts })),
    events: Effect.sync(() => log.slice())
  }
})

/** An in-memory pair with a fault injector on its link. */
export const makePair = <R>(
  handler: Handler<R>,
  config: FaultInjectionConfig = {},
  options: Omit<InMemoryTransport.InMemoryOptions, "interceptor"> = {}
): Effect.Effect<InMemoryTransport.InMemoryPair & { readonly faults: FaultInjector }, never, Scope.Scope | R> =>
  Effect.gen(function*() {
    const faults = yield* make(config)
    const pair = yield* InMemoryTransport.makePair(handler, { ...options, interceptor: faults.interceptor })
    return { ...pair, faults }
  })
