/**
 * `ours-handler` whose `tools/call` answers one turn later, as any handler
 * that waits on I/O does: its request's fiber is still running when the
 * handler returns, so the session keeps it by id until it ends, which a
 * handler that answers at once never needs.
 */
import { handler, serve } from "./bare-handler.ts"

serve(handler("bench-ours-async", { later: true }))
