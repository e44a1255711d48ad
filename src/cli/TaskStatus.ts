/**
 * The status of the task a tool call runs as (the tasks extension), shown on
 * stderr while `call` follows it: the task's id once, so that it can be
 * looked at again with `task get <id>`, then each status as it changes.
 */
import * as Effect from "effect/Effect"
import type { TaskState } from "../client/TaskHandle.ts"
import * as Output from "./Output.ts"

/** One state in a few words: its status, and the server's message when it gave one. */
export const describe = (state: TaskState): string =>
  state.statusMessage === undefined ? state.status : `${state.status}: ${state.statusMessage}`

/** Shows each state a call's task reports (its id first); `clear` runs before a line is written (a progress bar). */
export const reporter = (clear: Effect.Effect<void> = Effect.void) => {
  let id: string | undefined
  return (state: TaskState): Effect.Effect<void> =>
    Effect.andThen(clear, () => {
      const first = id !== state.taskId
      id = state.taskId
      return first
        ? Effect.andThen(Output.note(`task: ${state.taskId}`), Output.note(`task ${describe(state)}`))
        : Output.note(`task ${describe(state)}`)
    })
}
