/** Every benchmark client by name, loaded on demand (so a process pays only for the one it measures). */
import { resolve } from "node:path"
import type { BenchClient, ClientOptions } from "./types.ts"

export type ClientModule = {
  readonly make: (command: string, args: ReadonlyArray<string>, options?: ClientOptions) => Promise<BenchClient>
}
type Loader = () => Promise<ClientModule>

export const loaders: Record<string, Loader> = {
  raw: () => import("./raw.ts"),
  ours: () => import("./ours.ts"),
  "ours-mcp": () => import("./ours-mcp.ts"),
  // The server's stderr straight to ours, as `effect-floor` and the SDK's client leave it; and
  // also without descendant tracking, which neither has: `McpClient` set up as the floor is.
  "ours-mcp-inherit": async () => ({ make: (await import("./ours-mcp.ts")).makeWith({ stderr: { mode: "inherit" } }) }),
  "ours-mcp-inherit-untracked": async () => ({
    make: (await import("./ours-mcp.ts")).makeWith({
      stderr: { mode: "inherit" },
      shutdown: { descendantSampleInterval: false }
    })
  }),
  "ours-mcp-telemetry": () => import("./ours-mcp-telemetry.ts"),
  sdk: () => import("./sdk.ts"),
  sdk2: () => import("./sdk2.ts"),
  "sdk-transport": () => import("./sdk-transport.ts"),
  "effect-ai": () => import("./effect-ai.ts"),
  // Ladder steps between `raw` and `ours`, for "where time goes".
  "raw-passthrough": () => import("./raw-passthrough.ts"),
  "raw-fiber": () => import("./raw-fiber.ts"),
  "effect-floor": () => import("./effect-floor.ts"),
  // Steps between `ours` and `ours-mcp`, for what `McpClient`'s call adds.
  "ours-call-options": () => import("./ours-call-options.ts"),
  "ours-mcp-request": () => import("./ours-mcp-request.ts")
}

/** A client name, or the path of a module with the same `make` (compares another build). */
export const loaderFor = (name: string): Loader => {
  const known = loaders[name]
  if (known !== undefined) return known
  if (name.endsWith(".ts")) return () => import(resolve(name))
  throw new Error(`unknown client ${name} (known: ${Object.keys(loaders).join(", ")})`)
}
