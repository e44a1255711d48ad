/**
 * A loopback HTTP server playing both an OAuth 2.1 authorization server and
 * an MCP server protected by it, with knobs for the ways either can be
 * set up or misbehave. It checks what a real one would: PKCE verifier
 * against challenge, the resource indicator, refresh tokens (rotated and
 * revocable), bearer tokens and their scopes.
 */
import { createHash } from "node:crypto"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"

export interface Seen {
  readonly method: string
  readonly path: string
  readonly query: URLSearchParams
  readonly form: URLSearchParams
  readonly json: any
  readonly headers: http.IncomingHttpHeaders
}

export interface Knobs {
  /**
   * Where the protected resource metadata is served. `hint-missing`: the
   * challenge names a location where nothing is; `error`: the well-known
   * locations answer 500.
   */
  prm: "path" | "root" | "hint" | "none" | "hint-missing" | "error"
  /** Replaces the metadata document's body. */
  prmBody?: string | undefined
  /** Replaces the authorization server metadata document's body. */
  asBody?: string | undefined
  /** Which well-known document of the issuer answers. */
  asMetadata: "oauth" | "openid" | "none"
  /** The issuer's path under the origin ("" or "/tenant1"). */
  issuerPath: string
  dcr: boolean
  cimd: boolean
  token: "ok" | "500" | "hang"
  expiresIn: number | undefined
  /** Rotate the refresh token on each refresh. */
  rotate: boolean
  /** The origin of the `resource_metadata` URL in the challenge (default: the server's own). */
  hintOrigin?: string | undefined
  /** The scope the 401 asks for. */
  challengeScope?: string | undefined
  /** Secret of the pre-registered confidential client `svc`. */
  clientSecret: string
  /** Token endpoint auth methods advertised. */
  authMethods: ReadonlyArray<string>
}

export interface AuthWorld {
  readonly origin: string
  readonly mcpUrl: string
  readonly issuer: string
  readonly knobs: Knobs
  readonly seen: Array<Seen>
  /** Access tokens issued: token → scopes; delete one to revoke it. */
  readonly accessTokens: Map<string, { scopes: ReadonlyArray<string>; expired: boolean }>
  /** Valid refresh tokens. */
  readonly refreshTokens: Set<string>
  /** Every access token ever issued, to look for in logs. */
  readonly issued: Array<string>
  readonly count: (path: string, grant?: string) => number
}

let counter = 0
const fresh = (prefix: string) => `${prefix}-${++counter}-${Math.random().toString(36).slice(2)}`

const readBody = (req: http.IncomingMessage): Promise<string> =>
  new Promise((resolve) => {
    let text = ""
    req.setEncoding("utf8")
    req.on("data", (chunk) => (text += chunk))
    req.on("end", () => resolve(text))
  })

export const make = (overrides: Partial<Knobs> = {}) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const knobs: Knobs = {
        prm: "path",
        asMetadata: "oauth",
        issuerPath: "",
        dcr: true,
        cimd: false,
        token: "ok",
        expiresIn: 3600,
        rotate: true,
        clientSecret: "svc-secret",
        authMethods: ["none", "client_secret_basic", "client_secret_post"],
        ...overrides
      }
      const seen: Array<Seen> = []
      const accessTokens = new Map<string, { scopes: ReadonlyArray<string>; expired: boolean }>()
      const refreshTokens = new Set<string>()
      const issued: Array<string> = []
      const codes = new Map<string, { challenge: string; resource: string; scope: string; clientId: string }>()
      const clients = new Map<string, string>()
      const rtScope = new Map<string, string>()
      const hanging: Array<http.ServerResponse> = []
      let origin = ""

      const issueTokens = (scope: string) => {
        const access = fresh("at")
        accessTokens.set(access, { scopes: scope === "" ? [] : scope.split(" "), expired: false })
        issued.push(access)
        const refresh = fresh("rt")
        refreshTokens.add(refresh)
        return { access, refresh }
      }

      const server = http.createServer(async (req, res) => {
        const url = new URL(req.url!, origin)
        const body = await readBody(req)
        const form = new URLSearchParams(req.headers["content-type"]?.startsWith("application/x-www-form-urlencoded") ? body : "")
        let json: any
        try {
          json = req.headers["content-type"]?.startsWith("application/json") ? JSON.parse(body) : undefined
        } catch {
          json = undefined
        }
        seen.push({ method: req.method!, path: url.pathname, query: url.searchParams, form, json, headers: req.headers })
        const send = (status: number, value: unknown, headers: Record<string, string> = {}) => {
          const text = typeof value === "string" ? value : JSON.stringify(value)
          res.writeHead(status, { "content-type": "application/json", ...headers })
          res.end(text)
        }
        const issuer = `${origin}${knobs.issuerPath}`
        const prmDoc = () => knobs.prmBody ?? JSON.stringify({
          resource: `${origin}/mcp`,
          authorization_servers: [issuer],
          scopes_supported: ["read", "write"]
        })
        const asDoc = {
          issuer,
          authorization_endpoint: `${origin}/authorize`,
          token_endpoint: `${origin}/token`,
          ...(knobs.dcr ? { registration_endpoint: `${origin}/register` } : {}),
          code_challenge_methods_supported: ["S256"],
          token_endpoint_auth_methods_supported: knobs.authMethods,
          ...(knobs.cimd ? { client_id_metadata_document_supported: true } : {})
        }
        const path = url.pathname
        // Protected resource metadata
        if (path === "/.well-known/oauth-protected-resource/mcp" && knobs.prm === "path") return send(200, prmDoc())
        if (path === "/.well-known/oauth-protected-resource" && knobs.prm === "root") return send(200, prmDoc())
        if (path === "/custom/prm.json" && knobs.prm === "hint") return send(200, prmDoc())
        if (path.startsWith("/.well-known/oauth-protected-resource") && knobs.prm === "error") return send(500, "oops")
        // Authorization server metadata
        if (knobs.asMetadata === "oauth" && path === `/.well-known/oauth-authorization-server${knobs.issuerPath}`) {
          return send(200, knobs.asBody ?? asDoc)
        }
        if (knobs.asMetadata === "openid" && path === `${knobs.issuerPath}/.well-known/openid-configuration`) {
          return send(200, asDoc)
        }
        if (path === "/register" && knobs.dcr && req.method === "POST") {
          const id = fresh("client")
          clients.set(id, json?.redirect_uris?.[0])
          return send(201, { client_id: id, redirect_uris: json?.redirect_uris, token_endpoint_auth_method: "none" })
        }
        if (path === "/authorize") {
          const q = url.searchParams
          const code = fresh("code")
          codes.set(code, {
            challenge: q.get("code_challenge") ?? "",
            resource: q.get("resource") ?? "",
            scope: q.get("scope") ?? "",
            clientId: q.get("client_id") ?? ""
          })
          const back = new URL(q.get("redirect_uri")!)
          back.searchParams.set("code", code)
          back.searchParams.set("state", q.get("state") ?? "")
          res.writeHead(302, { location: back.href })
          return res.end()
        }
        if (path === "/token" && req.method === "POST") {
          if (knobs.token === "500") return send(500, "oops")
          if (knobs.token === "hang") return void hanging.push(res)
          const grant = form.get("grant_type")
          if (grant === "authorization_code") {
            const code = codes.get(form.get("code") ?? "")
            codes.delete(form.get("code") ?? "")
            const verifier = form.get("code_verifier") ?? ""
            const challenge = createHash("sha256").update(verifier).digest("base64url")
            if (code === undefined || challenge !== code.challenge || form.get("resource") !== code.resource) {
              return send(400, { error: "invalid_grant", error_description: "code, verifier or resource mismatch" })
            }
            const { access, refresh } = issueTokens(code.scope)
            rtScope.set(refresh, code.scope)
            return send(200, {
              access_token: access,
              token_type: "Bearer",
              refresh_token: refresh,
              ...(knobs.expiresIn === undefined ? {} : { expires_in: knobs.expiresIn }),
              scope: code.scope
            })
          }
          if (grant === "refresh_token") {
            const rt = form.get("refresh_token") ?? ""
            if (!refreshTokens.has(rt)) return send(400, { error: "invalid_grant", error_description: "refresh token revoked" })
            const { access, refresh } = issueTokens(rtScope.get(rt) ?? "")
            rtScope.set(refresh, rtScope.get(rt) ?? "")
            // Rotation: the old refresh token dies and the new one is handed out; otherwise the old one lives on.
            refreshTokens.delete(knobs.rotate ? rt : refresh)
            return send(200, {
              access_token: access,
              token_type: "Bearer",
              ...(knobs.rotate ? { refresh_token: refresh } : {}),
              ...(knobs.expiresIn === undefined ? {} : { expires_in: knobs.expiresIn })
            })
          }
          if (grant === "client_credentials") {
            const basic = req.headers.authorization?.startsWith("Basic ")
              ? Buffer.from(req.headers.authorization.slice(6), "base64").toString().split(":")
              : undefined
            const [id, secret] = basic ?? [form.get("client_id"), form.get("client_secret")]
            if (id !== "svc" || secret !== knobs.clientSecret) return send(401, { error: "invalid_client" })
            const { access } = issueTokens(form.get("scope") ?? "")
            return send(200, { access_token: access, token_type: "Bearer", expires_in: 3600 })
          }
          return send(400, { error: "unsupported_grant_type" })
        }
        if (path === "/mcp") {
          const hint = knobs.prm === "hint" || knobs.prm === "hint-missing" ? `, resource_metadata="${knobs.hintOrigin ?? origin}/custom/prm.json"` : ""
          const scope = knobs.challengeScope === undefined ? "" : `, scope="${knobs.challengeScope}"`
          const auth = req.headers.authorization
          const token = auth?.startsWith("Bearer ") ? accessTokens.get(auth.slice(7)) : undefined
          if (token === undefined || token.expired) {
            return send(401, { error: "unauthorized" }, { "www-authenticate": `Bearer error="invalid_token"${hint}${scope}` })
          }
          if (json?.method === "tools/call" && json.params?.name === "admin" && !token.scopes.includes("admin")) {
            return send(403, { error: "forbidden" }, {
              "www-authenticate": `Bearer error="insufficient_scope", scope="admin"${hint}`
            })
          }
          if (json?.id === undefined) {
            res.writeHead(202)
            return res.end()
          }
          return send(200, { jsonrpc: "2.0", id: json.id, result: { scopes: token.scopes } })
        }
        send(404, { error: "not_found" })
      })
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      const world: AuthWorld = {
        origin,
        mcpUrl: `${origin}/mcp`,
        issuer: `${origin}${knobs.issuerPath}`,
        knobs,
        seen,
        accessTokens,
        refreshTokens,
        issued,
        count: (path, grant) =>
          seen.filter((s) => s.path === path && (grant === undefined || s.form.get("grant_type") === grant)).length
      }
      return { world, server, hanging }
    }),
    ({ hanging, server }) =>
      Effect.promise(() => {
        for (const res of hanging) res.destroy()
        server.closeAllConnections()
        return new Promise<void>((resolve) => server.close(() => resolve()))
      })
  ).pipe(Effect.map(({ world }) => world))

/**
 * The user's part, played by the test: follow the authorization URL to its
 * redirect (the test server answers at once), optionally tampering with it.
 */
export const browser = (tamper: (redirect: URL) => URL = (u) => u) => {
  let pending: Promise<string> | undefined
  const opened: Array<string> = []
  return {
    opened,
    interaction: {
      openUrl: (url: string) =>
        Effect.sync(() => {
          opened.push(url)
          pending = fetch(url, { redirect: "manual" }).then((r) => tamper(new URL(r.headers.get("location")!)).href)
        }),
      receiveRedirect: Effect.promise(() => pending!)
    }
  }
}
