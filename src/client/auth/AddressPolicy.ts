/**
 * Which addresses the client's own authorization requests may reach. The
 * URLs discovery follows (the authorization server of the protected
 * resource metadata, the endpoints of its metadata) are chosen by the
 * server, so a public server could otherwise make the client request
 * loopback, private, link-local or cloud metadata addresses on its behalf.
 * A target is refused when its host is, or resolves to, such an address,
 * unless the MCP server itself is on an address of the same kind, or the
 * application allows it.
 *
 * The check resolves the name, then the HTTP client connects, resolving it
 * again: a name whose answer changes in between (DNS rebinding) is not
 * caught. Pinning the connection to the checked address needs control of
 * the HTTP client's connections, which the `HttpClient` service does not
 * offer.
 */
import * as dns from "node:dns"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { ForbiddenAddress } from "../../AuthError.ts"
import { TransportClosed } from "../../McpError.ts"

/**
 * The kinds of address that are not reachable from the internet at large.
 * `unspecified` is 0.0.0.0/8 and `::` (connecting to it reaches this host);
 * `shared` is 100.64.0.0/10 (carrier-grade NAT); `private` includes the
 * IPv6 unique local (fc00::/7) and site-local (fec0::/10) ranges;
 * `reserved` is multicast, 240.0.0.0/4 and IPv4-compatible IPv6.
 *
 * @since 0.1.0
 * @category models
 */
export type InternalKind = "loopback" | "private" | "link-local" | "shared" | "unspecified" | "reserved"

/**
 * What an address is: public, or internal with the range it is in.
 *
 * @since 0.1.0
 * @category models
 */
export type Classification =
  | { readonly kind: "public" }
  | { readonly kind: InternalKind; readonly range: string }

/**
 * Internal targets allowed beyond those of the MCP server's own kind:
 * `true` allows every address; a list allows host names (exact,
 * case-insensitive: their addresses are not checked) and addresses or CIDR
 * ranges (`10.0.0.0/8`, `fd00::/8`, `192.168.1.7`). An entry with a `/`
 * that is not a range matches nothing.
 *
 * @since 0.1.0
 * @category models
 */
export type Allowance = boolean | ReadonlyArray<string>

/**
 * Resolves a host name to every address it has (IPv4 and IPv6), as the
 * HTTP client would.
 *
 * @since 0.1.0
 * @category models
 */
export type Resolve = (hostname: string) => Effect.Effect<ReadonlyArray<string>, Error>

/** The system resolver (`getaddrinfo`, hosts file included), as `fetch` and `node:http` use it. */
const systemResolve: Resolve = (hostname) =>
  Effect.callback<ReadonlyArray<string>, Error>((resume) => {
    dns.lookup(hostname, { all: true, verbatim: true }, (error, addresses) => {
      resume(error ? Effect.fail(error) : Effect.succeed(addresses.map((a) => a.address)))
    })
  })

/**
 * The resolver the check uses. Default: the system's (`dns.lookup` with
 * `all: true`). Provide another to test, or to match an HTTP client that
 * resolves otherwise.
 *
 * @since 0.1.0
 * @category services
 */
export class HostResolver extends Context.Reference<Resolve>("effect-mcp-transport/client/auth/HostResolver", {
  defaultValue: () => systemResolve
}) {}

// ---------------------------------------------------------------------------
// Addresses as 16 bytes, IPv4 as IPv4-mapped IPv6 (::ffff:a.b.c.d)

const parseIPv4 = (text: string): Array<number> | undefined => {
  const parts = text.split(".")
  if (parts.length !== 4) return undefined
  const bytes: Array<number> = []
  for (const part of parts) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part) || Number(part) > 255) return undefined
    bytes.push(Number(part))
  }
  return bytes
}

const parseIPv6 = (text: string): Array<number> | undefined => {
  let head = text
  let tail: Array<number> = []
  const lastColon = head.lastIndexOf(":")
  if (head.slice(lastColon + 1).includes(".")) {
    const v4 = parseIPv4(head.slice(lastColon + 1))
    if (v4 === undefined) return undefined
    tail = [(v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!]
    head = head.slice(0, lastColon + 1)
    if (head.endsWith(":") && !head.endsWith("::")) head = head.slice(0, -1)
  }
  const halves = head.split("::")
  if (halves.length > 2) return undefined
  const groups = (part: string): Array<number> | undefined => {
    if (part === "") return []
    const out: Array<number> = []
    for (const group of part.split(":")) {
      if (!/^[0-9a-f]{1,4}$/i.test(group)) return undefined
      out.push(parseInt(group, 16))
    }
    return out
  }
  const left = groups(halves[0]!)
  const right = halves.length === 2 ? groups(halves[1]!) : []
  if (left === undefined || right === undefined) return undefined
  const given = left.length + right.length + tail.length
  let words: Array<number>
  if (halves.length === 2) {
    if (given > 7) return undefined
    words = [...left, ...Array<number>(8 - given).fill(0), ...right, ...tail]
  } else {
    if (given !== 8) return undefined
    words = [...left, ...tail]
  }
  return words.flatMap((w) => [w >> 8, w & 0xff])
}

const MAPPED_PREFIX = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]

/** The 16 bytes of an IPv4 or IPv6 address (brackets and a zone allowed), or `undefined` for anything else. */
const parseAddress = (text: string): Array<number> | undefined => {
  const bare = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text
  const v4 = parseIPv4(bare)
  if (v4 !== undefined) return [...MAPPED_PREFIX, ...v4]
  if (!bare.includes(":")) return undefined
  const percent = bare.indexOf("%")
  return parseIPv6(percent === -1 ? bare : bare.slice(0, percent))
}

interface Range {
  readonly bytes: ReadonlyArray<number>
  readonly bits: number
}

const parseRange = (text: string): Range | undefined => {
  const slash = text.indexOf("/")
  const bytes = parseAddress(slash === -1 ? text : text.slice(0, slash))
  if (bytes === undefined) return undefined
  const isV4 = parseIPv4(slash === -1 ? text : text.slice(0, slash)) !== undefined
  const max = isV4 ? 32 : 128
  if (slash === -1) return { bytes, bits: 128 }
  const suffix = text.slice(slash + 1)
  if (!/^[0-9]{1,3}$/.test(suffix) || Number(suffix) > max) return undefined
  return { bytes, bits: (isV4 ? 96 : 0) + Number(suffix) }
}

const inRange = (address: ReadonlyArray<number>, range: Range): boolean => {
  for (let bit = 0; bit < range.bits; bit += 8) {
    const take = Math.min(8, range.bits - bit)
    const mask = (0xff << (8 - take)) & 0xff
    if ((address[bit / 8]! & mask) !== (range.bytes[bit / 8]! & mask)) return false
  }
  return true
}

const INTERNAL: ReadonlyArray<readonly [string, InternalKind]> = [
  ["0.0.0.0/8", "unspecified"],
  ["10.0.0.0/8", "private"],
  ["100.64.0.0/10", "shared"],
  ["127.0.0.0/8", "loopback"],
  ["169.254.0.0/16", "link-local"],
  ["172.16.0.0/12", "private"],
  ["192.168.0.0/16", "private"],
  ["224.0.0.0/4", "reserved"],
  ["240.0.0.0/4", "reserved"],
  ["::/128", "unspecified"],
  ["::1/128", "loopback"],
  ["::/96", "reserved"],
  ["fc00::/7", "private"],
  ["fe80::/10", "link-local"],
  ["fec0::/10", "private"],
  ["ff00::/8", "reserved"]
]
const INTERNAL_RANGES = INTERNAL.map(([text, kind]) => ({ text, kind, range: parseRange(text)! }))

/** NAT64 (64:ff9b::/96) carries an IPv4 address, reached through the translator. */
const NAT64 = parseRange("64:ff9b::/96")!

const classifyBytes = (bytes: ReadonlyArray<number>): Classification => {
  const effective = inRange(bytes, NAT64) ? [...MAPPED_PREFIX, ...bytes.slice(12)] : bytes
  for (const { kind, range, text } of INTERNAL_RANGES) {
    if (inRange(effective, range)) return { kind, range: text }
  }
  return { kind: "public" }
}

/**
 * What an IP address is (IPv4, IPv6 with or without brackets, IPv4-mapped
 * and NAT64 forms by the IPv4 address they carry); `undefined` when the
 * text is not an IP address.
 *
 * @since 0.1.0
 * @category utils
 */
export const classify = (address: string): Classification | undefined => {
  const bytes = parseAddress(address)
  return bytes === undefined ? undefined : classifyBytes(bytes)
}

/** A URL's host name as compared: lower-case, without a trailing dot or brackets. */
const hostOf = (url: URL): string => {
  const host = url.hostname.toLowerCase().replace(/\.$/, "")
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host
}

/** `localhost` and its subdomains are loopback whatever a resolver says (RFC 6761 §6.3). */
const isLocalhostName = (host: string): boolean => host === "localhost" || host.endsWith(".localhost")

/** The addresses a host stands for: itself when it is one, loopback for `localhost` names, else the resolver's. */
const addressesOf = (host: string): Effect.Effect<ReadonlyArray<string>, Error> => {
  if (parseAddress(host) !== undefined) return Effect.succeed([host])
  if (isLocalhostName(host)) return Effect.succeed(["127.0.0.1", "::1"])
  return Effect.gen(function*() {
    const resolve = yield* HostResolver
    const addresses = yield* resolve(host)
    if (addresses.length === 0) return yield* Effect.fail(new Error(`${host} has no address`))
    return addresses
  })
}

const KIND_TEXT: Readonly<Record<InternalKind, string>> = {
  loopback: "a loopback address",
  private: "a private network address",
  "link-local": "a link-local address",
  shared: "a carrier-grade NAT address",
  unspecified: "an unspecified address",
  reserved: "a reserved address"
}

/** The kinds of internal address the MCP server's host has; none when it cannot be resolved. */
const serverKinds = (serverHost: string): Effect.Effect<ReadonlySet<string>> =>
  addressesOf(serverHost).pipe(
    Effect.map((addresses) => new Set(addresses.map((a) => classify(a)?.kind ?? "public"))),
    Effect.orElseSucceed(() => new Set<string>())
  )

/**
 * How a check fails: the target is refused, or its host cannot be resolved.
 *
 * @since 0.1.0
 * @category models
 */
export type CheckError = ForbiddenAddress | TransportClosed

/**
 * Whether a request for the MCP server `serverUrl` may go to `target`:
 * always to the server's own host; elsewhere only when every address of
 * the target's host is public, of a kind the server's own host has, or
 * allowed by `allow`. A refusal is `ForbiddenAddress`; a host that cannot be
 * resolved fails as a request without an answer would (`TransportClosed`).
 *
 * @since 0.1.0
 * @category checks
 */
export const check = (
  serverUrl: string,
  target: string,
  allow: Allowance = false
): Effect.Effect<void, CheckError> =>
  Effect.gen(function*() {
    let url: URL, server: URL
    try {
      url = new URL(target)
      server = new URL(serverUrl)
    } catch {
      return
    }
    const host = hostOf(url)
    if (host === hostOf(server) || allow === true) return
    const allowed = allow === false ? [] : allow
    if (allowed.some((entry) => entry.toLowerCase().replace(/\.$/, "") === host)) return
    const addresses = yield* addressesOf(host).pipe(
      Effect.mapError((error) => new TransportClosed({ reason: `resolving ${host} failed: ${error.message}`, cause: error }))
    )
    const ranges = allowed.flatMap((entry) => {
      const range = entry.includes("/") || parseAddress(entry) !== undefined ? parseRange(entry) : undefined
      return range === undefined ? [] : [range]
    })
    let kinds: ReadonlySet<string> | undefined
    for (const address of addresses) {
      const bytes = parseAddress(address)
      // What the resolver gave is not an address: nothing says where the connection would go.
      if (bytes === undefined) {
        return yield* new ForbiddenAddress({ url: target, serverUrl, address, reason: "not an IP address" })
      }
      const found = classifyBytes(bytes)
      if (found.kind === "public" || ranges.some((range) => inRange(bytes, range))) continue
      kinds ??= yield* serverKinds(hostOf(server))
      if (kinds.has(found.kind)) continue
      return yield* new ForbiddenAddress({
        url: target,
        serverUrl,
        address,
        reason: `${KIND_TEXT[found.kind]} (${found.range})`
      })
    }
  })
