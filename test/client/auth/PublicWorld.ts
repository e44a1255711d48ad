/**
 * An MCP server at a public name (https://mcp.example.test, 203.0.113.10 by
 * the fake resolver) and a public authorization server
 * (https://as.example.test), as canned answers of a stub HTTP client, and a
 * loopback service standing for an internal one. Nothing connects anywhere
 * but 127.0.0.1: the stub records every URL asked of it, sends loopback
 * ones through the real client, and fails the rest as unreachable.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"
import * as HttpClient from "effect/http/HttpClient"
import { HttpClientError, TransportError } from "effect/http/HttpClientError"
import * as HttpClientResponse from "effect/http/HttpClientResponse"
import type * as AddressPolicy from "../../../src/client/auth/AddressPolicy.ts"

export const PUBLIC_MCP = "https://mcp.example.test/mcp"
export const PRM_URL = "https://mcp.example.test/.well-known/oauth-protected-resource/mcp"
/** The 401 challenge of the public MCP server. */
export const CHALLENGE = { resourceMetadata: PRM_URL }
export const CHALLENGE_HEADER = `Bearer resource_metadata="${PRM_URL}"`

export const NAMES: Readonly<Record<string, ReadonlyArray<string>>> = {
  "mcp.example.test": ["203.0.113.10"],
  "as.example.test": ["203.0.113.40", "2001:db8::40"],
  "auth.example.test": ["127.0.0.1"],
  "intranet.example.test": ["10.0.0.1"],
  "mixed.example.test": ["203.0.113.20", "10.0.0.7"],
  "mapped.example.test": ["::ffff:169.254.169.254"],
  "corp-mcp.example.test": ["10.1.0.5"],
  "odd.example.test": ["not-an-address"]
}

/** A resolver over `NAMES` that records what it was asked. */
export const fakeResolver = () => {
  const asked: Array<string> = []
  const resolve: AddressPolicy.Resolve = (host) =>
    Effect.suspend(() => {
      asked.push(host)
      const found = NAMES[host]
      return found === undefined ? Effect.fail(new Error(`getaddrinfo ENOTFOUND ${host}`)) : Effect.succeed(found)
    })
  return { asked, resolve }
}

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } })

/** A loopback service standing for an internal one: it records every request and answers 404. */
export const internalService = Effect.acquireRelease(
  Effect.promise(async () => {
    const hits: Array<string> = []
    const server = http.createServer((req, res) => {
      hits.push(`${req.method} ${req.url}`)
      req.resume()
      res.writeHead(404).end()
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    return { server, hits, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
  }),
  ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
)

export interface Canned {
  /** The authorization servers the MCP server's protected resource metadata names. */
  readonly authorizationServers: ReadonlyArray<string>
  /** Endpoints of the public authorization server https://as.example.test. */
  readonly endpoints?: Readonly<Record<string, string>> | undefined
}

/**
 * The public MCP server (https://mcp.example.test) and the public
 * authorization server (https://as.example.test) as canned answers; loopback
 * URLs go to the real client; anything else is recorded and fails as if
 * unreachable, without a connection.
 */
export const stubClient = (real: HttpClient.HttpClient, canned: Canned) => {
  const requested: Array<string> = []
  const client = HttpClient.make((request, url) => {
    requested.push(`${request.method} ${url.href}`)
    if (url.hostname === "127.0.0.1") return real.execute(request)
    const answer = (response: Response) => Effect.succeed(HttpClientResponse.fromWeb(request, response))
    if (url.href === "https://mcp.example.test/.well-known/oauth-protected-resource/mcp") {
      return answer(json({ resource: PUBLIC_MCP, authorization_servers: canned.authorizationServers }))
    }
    if (url.href === "https://as.example.test/.well-known/oauth-authorization-server") {
      return answer(json({
        issuer: "https://as.example.test",
        authorization_endpoint: "https://as.example.test/authorize",
        token_endpoint: "https://as.example.test/token",
        code_challenge_methods_supported: ["S256"],
        ...canned.endpoints
      }))
    }
    if (url.hostname.endsWith("example.test")) return answer(new Response("", { status: 404 }))
    return Effect.fail(
      new HttpClientError({ reason: new TransportError({ request, description: "unreachable from the test" }) })
    )
  })
  return { client, requested }
}
