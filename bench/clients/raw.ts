/** The practical limit on the client side: the raw requester driven from Promises. */
import { connect, INITIALIZE_PARAMS, MODERN_META, type RawOptions, TOOL_PARAMS } from "./raw-core.ts"
import type { BenchClient, ClientOptions } from "./types.ts"

export const makeWith =
  (options: RawOptions) =>
  async (command: string, args: ReadonlyArray<string>, client: ClientOptions = {}): Promise<BenchClient> => {
    const connection = connect(command, args, options)
    const request = (method: string, params?: unknown) =>
      new Promise<unknown>((resolve) => connection.send(method, params, resolve))
    // The stateless revision has no handshake: every request carries the revision in `_meta`.
    const modern = client.protocol === "2026-07-28"
    if (!modern) {
      await request("initialize", INITIALIZE_PARAMS)
      connection.notify("notifications/initialized")
    }
    const toolParams = modern ? { ...TOOL_PARAMS, _meta: MODERN_META } : TOOL_PARAMS
    const meta = modern ? MODERN_META : {}
    let token = 0
    return {
      callTool: () => request("tools/call", toolParams),
      ping: () => request("ping", modern ? { _meta: MODERN_META } : undefined),
      // Every line that is not a response is one of the calls' progress notifications.
      callToolWithProgress: () => request("tools/call", { ...TOOL_PARAMS, _meta: { ...meta, progressToken: ++token } }),
      progressReceived: connection.notificationsReceived,
      close: connection.close
    }
  }

export const make = makeWith({})
