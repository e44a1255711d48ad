import { Data, Effect } from "effect"
class RpcError extends Data.TaggedError("RpcError")<{ readonly code: number; readonly rpcMessage: string }> {
  override get message() { return `MCP error ${this.code}: ${this.rpcMessage}` }
}
const e = new RpcError({ code: 1, rpcMessage: "boom" })
console.log(e.message, String(e), e instanceof Error)
Effect.runPromiseExit(Effect.fail(e)).then((x) => console.log(JSON.stringify(x).slice(0, 300)))
