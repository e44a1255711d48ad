/**
 * The import boundaries of src/, checked by boundaries.test.ts. Edit this
 * file when files move: the globs say which folder is which layer.
 *
 * Imports counted: static, `export … from`, dynamic `import("…")` with a
 * literal, and type-only imports (a type from another side couples as much
 * as a value does). See importGraph.ts.
 */
import type { Glob, KnownViolation, Rule } from "./boundaries.ts"

/** Protocol core: JSON-RPC, errors, versions and the shared internals every side builds on. */
const core: ReadonlyArray<Glob> = ["src/*.ts", "src/internal/**"]
/** The package root re-exports every side: it composes, it is not core. */
const rootIndex: ReadonlyArray<Glob> = ["src/index.ts"]
const clientSide: ReadonlyArray<Glob> = ["src/client/**"]
const serverSide: ReadonlyArray<Glob> = ["src/server/**"]
const transports: ReadonlyArray<Glob> = [...clientSide, ...serverSide, "src/bridge/**", "src/cli/**", "src/testing/**"]
/** The client transports and the internals they are built from. */
const clientTransports: ReadonlyArray<Glob> = ["src/client/**/*Transport.ts", "src/client/internal/**"]
const clientProtocol: ReadonlyArray<Glob> = ["src/client/McpClient.ts", "src/client/McpManager.ts", "src/client/manager/**"]
const cli: ReadonlyArray<Glob> = ["src/cli/**"]

/**
 * Modules whose job is to join the client and the server side. Modules
 * outside both sides (bridge, testing) need no entry; a module inside one
 * side that composes both does.
 */
export const composition: ReadonlyArray<Glob> = ["src/bridge/**", "src/testing/**"]

export const rules: ReadonlyArray<Rule> = [
  {
    id: "core-no-transport",
    says: "the core (src/*.ts, src/internal/) must not import a transport, the CLI or the testing kit",
    from: core,
    fromExcept: rootIndex,
    to: transports
  },
  {
    id: "transport-no-protocol",
    says: "a client transport (src/client/**/*Transport.ts, src/client/internal/) must not import the protocol layer (McpClient) or the manager",
    from: clientTransports,
    to: clientProtocol
  },
  {
    id: "client-not-server",
    says: "the client side (src/client/) must not import the server side (src/server/), unless listed in `composition`",
    from: clientSide,
    fromExcept: composition,
    to: serverSide
  },
  {
    id: "server-not-client",
    says: "the server side (src/server/) must not import the client side (src/client/), unless listed in `composition`",
    from: serverSide,
    fromExcept: composition,
    to: clientSide
  },
  {
    id: "cli-private",
    says: "nothing outside src/cli/ imports src/cli/",
    from: ["src/**"],
    fromExcept: cli,
    to: cli
  }
]

/**
 * Violations tolerated in the tree (none today), each with why it is there. The test fails on a
 * violation not listed here and on a listed one that no longer occurs, so
 * this list only shrinks.
 */
export const knownViolations: ReadonlyArray<KnownViolation> = []
