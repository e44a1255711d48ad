/**
 * Ladder step on our runtime: `StdioServerTransport` with a bare `Handler`
 * (no `McpServer`: no lifecycle checks, no Schema decoding). The gap to
 * `ours-mcp` is what the protocol layer costs; the gap to the raw responder
 * is what the transport costs.
 */
import { handler, serve } from "./bare-handler.ts"

serve(handler("bench-ours-handler", { later: false }))
