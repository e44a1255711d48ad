/** The practical limit on the client side: the raw requester driven from Promises. */
import { connect, INITIALIZE_PARAMS, type RawOptions, TOOL_PARAMS } from "./raw-core.ts"
import type { BenchClient } from "./types.ts"

export const makeWith = (options: RawOptions) => async (command: string, args: ReadonlyArray<string>): Promise<BenchClient> => {
  const connection = connect(command, args, options)
  const request = (method: string, params?: unknown) =>
    new Promise<unknown>((resolve) => connection.send(method, params, resolve))
  await request("initialize", INITIALIZE_PARAMS)
  connection.notify("notifications/initialized")
  return {
    callTool: () => request("tools/call", TOOL_PARAMS),
    ping: () => request("ping"),
    close: connection.close
  }
}

export const make = makeWith({})
