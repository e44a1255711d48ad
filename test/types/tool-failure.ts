// Type-level checks for a tool handler's failures (compiled by `tsc --noEmit`; a needless
// `@ts-expect-error` is itself an error).
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as McpServer from "../../src/server/McpServer.ts"
import * as Tool from "../../src/server/Tool.ts"
import { RpcError } from "../../src/McpError.ts"

class Boom extends Schema.TaggedError<Boom>()("Boom", { reason: Schema.String }) {}
class Undeclared extends Schema.TaggedError<Undeclared>()("Undeclared", {}) {}

const server = McpServer.make({ serverInfo: { name: "types", version: "1.0.0" } })

// A declared failure, an RpcError and a defect are accepted.
export const declared = server.pipe(
  Tool.add("t", { failure: Boom }, () => Effect.fail(new Boom({ reason: "x" }))),
  Tool.add("u", { failure: Boom }, () => Effect.fail(new RpcError({ code: -32602, rpcMessage: "no" }))),
  Tool.add("v", {}, () => Effect.die("a fault, on purpose"))
)

// A failure the tool does not declare is refused where it is written.
export const undeclared = server.pipe(
  // @ts-expect-error Error is not the declared failure
  Tool.add("t", { failure: Boom }, () => Effect.fail(new Error("x")))
)

export const noFailureSchema = server.pipe(
  // @ts-expect-error a tool without a failure Schema cannot fail with its own error type
  Tool.add("t", {}, () => Effect.fail(new Undeclared()))
)
