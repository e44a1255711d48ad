/**
 * Ladder step: the raw requester driven from Effect fibers, one
 * `Effect.callback` per request. The gap to `raw` is what driving load from
 * fibers costs (the same driver as `ours` and `effect-ai`), before any
 * transport code.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { driveEffect, holdEffect } from "./effect-drive.ts"
import { connect, INITIALIZE_PARAMS, TOOL_PARAMS } from "./raw-core.ts"
import type { BenchClient } from "./types.ts"

export const make = async (command: string, args: ReadonlyArray<string>): Promise<BenchClient> => {
  const connection = connect(command, args)
  const request = (method: string, params?: unknown) =>
    Effect.callback<unknown>((resume) => connection.send(method, params, (result) => resume(Exit.succeed(result))))
  await Effect.runPromise(request("initialize", INITIALIZE_PARAMS))
  connection.notify("notifications/initialized")
  const callTool = request("tools/call", TOOL_PARAMS)
  const ping = request("ping")
  return {
    callTool: () => Effect.runPromise(callTool),
    ping: () => Effect.runPromise(ping),
    drive: (op, total, concurrency) => Effect.runPromise(driveEffect(op === "ping" ? ping : callTool, total, concurrency)),
    holdAsFibers: (count) => Effect.runPromise(holdEffect(callTool, count)),
    close: connection.close
  }
}
