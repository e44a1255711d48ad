/**
 * Ladder step: the raw requester reading stdout through a PassThrough, the
 * way effect's Node spawner hands a child's stdout to every Effect client.
 * The gap to `raw` is what that adapter costs, before any client code.
 */
import { makeWith } from "./raw.ts"

export const make = makeWith({ passThrough: true })
