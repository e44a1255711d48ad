/**
 * A catalogue that changes while the server serves it. The server's
 * catalogue methods are installed once, each reading the snapshot current
 * when its request arrives: a change swaps the whole snapshot (entries,
 * disabled names and the method tables built over them) in one step, so a
 * request sees either the catalogue before a change or the one after, never
 * a mix, and a call already dispatched keeps the entry it found.
 */
import * as Effect from "effect/Effect"
import * as JsonRpc from "../../JsonRpc.ts"
import { RpcError } from "../../McpError.ts"
import { DefinitionError } from "../DefinitionError.ts"
import * as Router from "../Router.ts"
import * as Catalogue from "./Catalogue.ts"
import { isRecord } from "../../internal/Records.ts"

/** The kinds of entries, named as `DefinitionError` names them. */
export type Kind = keyof typeof Catalogue.TABLES

type Table = (typeof Catalogue.TABLES)[Kind]

/** The notification that announces a change of each table. */
const CHANGED: Record<Table, string> = {
  tools: "notifications/tools/list_changed",
  resources: "notifications/resources/list_changed",
  templates: "notifications/resources/list_changed",
  prompts: "notifications/prompts/list_changed"
}

const LISTS: ReadonlySet<string> = new Set(["tools/list", "resources/list", "resources/templates/list", "prompts/list"])

type Disabled = Readonly<Record<Table, ReadonlySet<string>>>

interface Snapshot<R> {
  readonly full: Catalogue.Catalogue<R>
  readonly disabled: Disabled
  readonly methods: Readonly<Record<string, Catalogue.Method<R>>>
}

export interface Live<S> {
  /** The server to build a handler from: the catalogue methods read the current snapshot. */
  readonly server: S
  /**
   * Applies a change in one step and returns the notifications it calls
   * for (none when it changed nothing a list shows).
   */
  readonly apply: (change: Change) => Effect.Effect<ReadonlyArray<string>, DefinitionError>
}

export type Change =
  | { readonly _tag: "Add"; readonly step: (server: any) => Catalogue.Definable }
  | { readonly _tag: "Remove" | "Enable" | "Disable"; readonly kind: Kind; readonly name: string }

const NONE: ReadonlySet<string> = new Set()
const NOTHING_DISABLED: Disabled = { tools: NONE, resources: NONE, templates: NONE, prompts: NONE }

const without = <V>(map: ReadonlyMap<string, V>, names: ReadonlySet<string>): ReadonlyMap<string, V> =>
  names.size === 0 ? map : new Map(Array.from(map).filter(([name]) => !names.has(name)))

/** Whether two tables hold the same entries (a step leaves the tables it does not touch as they were, or copies them). */
const same = (a: ReadonlyMap<string, unknown> | ReadonlySet<string>, b: ReadonlyMap<string, unknown> | ReadonlySet<string>) => {
  if (a === b) return true
  if (a.size !== b.size) return false
  if (a instanceof Set || b instanceof Set) {
    for (const name of a.keys()) if (!b.has(name)) return false
    return true
  }
  const m = b as ReadonlyMap<string, unknown>
  for (const [name, entry] of (a as ReadonlyMap<string, unknown>)) if (m.get(name) !== entry) return false
  return true
}

/** The catalogue as clients see it: the disabled entries left out. */
const served = <R>(full: Catalogue.Catalogue<R>, disabled: Disabled): Catalogue.Catalogue<R> => ({
  tools: without(full.tools, disabled.tools),
  resources: without(full.resources, disabled.resources),
  templates: without(full.templates, disabled.templates),
  prompts: without(full.prompts, disabled.prompts),
  subscriptions: full.subscriptions
})

/** The capability and list method of each table. */
const KIND_OF: Record<Table, { readonly capability: "tools" | "resources" | "prompts"; readonly list: string }> = {
  tools: { capability: "tools", list: "tools/list" },
  resources: { capability: "resources", list: "resources/list" },
  templates: { capability: "resources", list: "resources/list" },
  prompts: { capability: "prompts", list: "prompts/list" }
}

/** The capabilities whose lists a change of the catalogue from `before` to `after` touches. */
const touched = (before: Snapshot<any>, full: Catalogue.Catalogue<any>, disabled: Disabled): ReadonlyArray<Table> =>
  (Object.keys(CHANGED) as Array<Table>).filter((table) =>
    !same(before.full[table], full[table]) || !same(before.disabled[table], disabled[table])
  )

/**
 * The server `server` becomes when its catalogue may change: a kind can
 * change when the server declares its `listChanged` in `capabilities` and
 * serves no method of that kind some other way; those kinds are served
 * even while empty. A server with no such kind is served as it is.
 */
export const make = <S extends Catalogue.Definable>(server: S): Live<S> => {
  const initial = Catalogue.of(server)
  const explicit = server.options.capabilities ?? {}
  const own = (method: string) => {
    const route = server.router.requests.get(method)
    return route !== undefined && !Catalogue.isCatalogueRoute(route)
  }
  const declares = (capability: string) => {
    const entry = explicit[capability]
    return isRecord(entry) && entry.listChanged === true
  }
  const kinds: Catalogue.Served = {
    tools: !own("tools/list") && !own("tools/call") && declares("tools"),
    resources: !own("resources/list") && !own("resources/read") && declares("resources"),
    prompts: !own("prompts/list") && !own("prompts/get") && declares("prompts"),
    completions: server.router.requests.has("completion/complete") && !own("completion/complete")
  }
  const refused = (table: Table) =>
    new DefinitionError({
      kind: "method",
      name: KIND_OF[table].list,
      reason: `cannot change while the server serves: declare capabilities.${KIND_OF[table].capability}.listChanged ` +
        "(and serve that kind with Tool, Resource or Prompt, not McpServer.method)"
    })

  let current: Snapshot<any> = { full: initial, disabled: NOTHING_DISABLED, methods: Catalogue.methodsOf(initial, kinds) }
  const installed = new Set(Object.keys(current.methods))

  const requests = new Map<string, Router.RequestRoute<any, any>>(server.router.requests)
  for (const method of installed) {
    requests.set(method, {
      decode: Effect.succeed,
      encode: Effect.succeed,
      handle: (params, ctx: { readonly session: { readonly era: string } }) => {
        const handle = current.methods[method]
        if (handle === undefined) {
          return Effect.fail(new RpcError({ code: JsonRpc.ErrorCode.MethodNotFound, rpcMessage: `Method not found: ${method}` }))
        }
        const result = handle(params, ctx)
        // A cached list could outlive the next change: clients of the stateless era are told to ask again.
        return LISTS.has(method) && ctx.session.era === "modern"
          ? Effect.map(result, (r) => ({ ...(r as object), ttlMs: 0 }))
          : result
      }
    })
  }
  // Nothing can change: the server is served as it is, and every change is refused.
  const liveServer = kinds.tools !== true && kinds.resources !== true && kinds.prompts !== true
    ? server
    : Object.assign(Object.create(Object.getPrototypeOf(server)), server, {
      router: { requests, notifications: server.router.notifications }
    }) as S

  // A definition step reads the catalogue off the routes it is given: a server with only the catalogue's.
  const scratch = Object.assign(Object.create(Object.getPrototypeOf(server)), server, { router: Router.empty() }) as S

  const isLive = (table: Table) => kinds[KIND_OF[table].capability] === true

  const next = (full: Catalogue.Catalogue<any>, disabled: Disabled): Effect.Effect<ReadonlyArray<string>, DefinitionError> => {
    const tables = touched(current, full, disabled)
    const fixed = tables.find((table) => !isLive(table))
    if (fixed !== undefined) return Effect.fail(refused(fixed))
    const methods = Catalogue.methodsOf(served(full, disabled), kinds)
    const missing = Object.keys(methods).find((m) => !installed.has(m))
    if (missing !== undefined) {
      return Effect.fail(
        new DefinitionError({
          kind: "method",
          name: missing,
          reason: "cannot be added while the server serves: define the server with an entry that needs it"
        })
      )
    }
    current = { full, disabled, methods }
    return Effect.succeed(Array.from(new Set(tables.map((table) => CHANGED[table]))))
  }

  const find = (kind: Kind, name: string): Effect.Effect<Table, DefinitionError> => {
    const table = Catalogue.TABLES[kind]
    return current.full[table].has(name)
      ? Effect.succeed(table)
      : Effect.fail(new DefinitionError({ kind, name, reason: "is not defined" }))
  }

  const setDisabled = (table: Table, name: string, disable: boolean) => {
    const names = new Set(current.disabled[table])
    if (disable) names.add(name)
    else names.delete(name)
    return { ...current.disabled, [table]: names }
  }

  const apply = (change: Change): Effect.Effect<ReadonlyArray<string>, DefinitionError> =>
    Effect.suspend(() => {
      switch (change._tag) {
        case "Add": {
          let full: Catalogue.Catalogue<any>
          try {
            full = Catalogue.of(change.step(Catalogue.install(scratch, current.full)))
          } catch (e) {
            if (e instanceof DefinitionError) return Effect.fail(e)
            throw e
          }
          return next(full, current.disabled)
        }
        case "Remove":
          return Effect.flatMap(find(change.kind, change.name), (table) => {
            const entries = new Map(current.full[table] as ReadonlyMap<string, unknown>)
            entries.delete(change.name)
            const disabled = current.disabled[table].has(change.name)
              ? setDisabled(table, change.name, false)
              : current.disabled
            return next({ ...current.full, [table]: entries }, disabled)
          })
        case "Enable":
        case "Disable":
          return Effect.flatMap(find(change.kind, change.name), (table) => {
            const disable = change._tag === "Disable"
            if (current.disabled[table].has(change.name) === disable) return Effect.succeed([])
            return next(current.full, setDisabled(table, change.name, disable))
          })
      }
    })

  return { server: liveServer, apply }
}
