/** The benchmark servers by name; each is a script to run with this Node. */
import { resolve } from "node:path"

const here = (file: string) => new URL(file, import.meta.url).pathname

/** For the request/response workloads (echo, ping). */
export const servers: Record<string, string> = {
  raw: here("../raw-responder.ts"),
  ours: here("./ours-mcp.ts"),
  "ours-handler": here("./ours-handler.ts"),
  "ours-async": here("./ours-async.ts"),
  "ours-io": here("./ours-io.ts"),
  "ours-typed": here("./ours-typed.ts"),
  "ours-tool": here("./ours-tool.ts"),
  "ours-tool-telemetry": here("./ours-tool-telemetry.ts"),
  sdk: here("./sdk.ts"),
  sdk2: here("./sdk2.ts")
}

/** For the in-flight workload: these also hold `held` calls (see tools.ts); `raw` is the latch responder. */
export const holdingServers: Record<string, string> = {
  raw: here("./latch-responder.ts"),
  ours: here("./ours-mcp.ts"),
  sdk: here("./sdk.ts"),
  sdk2: here("./sdk2.ts")
}

export const serverFile = (table: Record<string, string>, name: string): string => {
  const known = table[name]
  if (known !== undefined) return known
  if (name.endsWith(".ts")) return resolve(name)
  throw new Error(`unknown server ${name} (known: ${Object.keys(table).join(", ")})`)
}
