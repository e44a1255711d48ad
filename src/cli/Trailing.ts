/**
 * The words after `--` on the program's command line (a stdio server's
 * command). The program splits argv at the first `--` itself and provides
 * them here, because effect/cli appends them to the leaf command's
 * positionals, where they could no longer be told apart from the words
 * before `--`. A module of its own so the program can provide it without
 * loading the transports.
 */
import * as Context from "effect/Context"

export const Trailing = Context.Reference<ReadonlyArray<string>>("effect-mcp-transport/cli/Target/Trailing", {
  defaultValue: () => []
})
