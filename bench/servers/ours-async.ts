/**
 * `ours-handler` whose `tools/call` answers one turn later (after a yield),
 * as a handler waiting on a hand-off between fibers does: its request's
 * fiber is still running when the handler returns, so the session keeps it
 * by id until it ends, which a handler that answers at once never needs.
 */
import { handler, serve } from "./bare-handler.ts"

serve(handler("bench-ours-async", { later: true }))
