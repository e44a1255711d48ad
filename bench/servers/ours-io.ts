/**
 * `ours-handler` whose `tools/call` answers from an event-loop callback of its
 * own, as a handler waiting on I/O (a socket, a file) does: requests read
 * together are answered from separate callbacks.
 */
import { handler, serve } from "./bare-handler.ts"

serve(handler("bench-ours-io", { later: "io" }))
