/**
 * A loopback HTTP server playing both an OAuth 2.1 authorization server and
 * an MCP server protected by it, with knobs for the ways either can be
 * set up or misbehave. It checks what a real one would: PKCE verifier
 * against challenge, the resource indicator, refresh tokens (rotated and
 * revocable), bearer tokens and their scopes.
 */
import { createHash, createPublicKey, type KeyObject, verify } from "node:crypto"
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
  /** Advertise DPoP (ES256) and bind tokens to the proof's key when a token request carries one. */
  dpop: boolean
  /** The scheme of the MCP server's 401 challenge. Default: DPoP with `dpop`, else Bearer. */
  rsScheme?: "Bearer" | "DPoP" | undefined
  /**
   * The token endpoint's 400 use_dpop_nonce: "required" for a proof without its nonce, "refused" for
   * every proof (a broken server), "bare" for every proof and without a DPoP-Nonce header.
   */
  asNonce: "never" | "required" | "refused" | "bare"
  /** The MCP server's 401 use_dpop_nonce: "required" for a proof without its nonce, "refused" for every proof. */
  rsNonce: "never" | "required" | "refused"
  /** The public key of client `svc`'s private_key_jwt assertions (client credentials). */
  clientKey?: KeyObject | undefined
  /** The public key a JWT bearer grant's assertion must be signed with (workload identity). */
  assertionKey?: KeyObject | undefined
  /**
   * Awaited before a refresh is answered: `rotated` once the refresh token
   * has been replaced (the answer carries the new pair), `refused` for a
   * refresh token that is no longer valid. Lets a test order the answers of
   * racing refreshes.
   */
  beforeRefreshAnswer?: ((outcome: "rotated" | "refused") => Promise<void>) | undefined
}

/** A compact JWS taken apart, and whether its signature verifies with `key` (or its header's `jwk`). */
export interface CheckedJwt {
  readonly header: Record<string, any>
  readonly claims: Record<string, any>
  readonly valid: boolean
}

export const checkJwt = (jwt: string, key?: KeyObject): CheckedJwt => {
  const [h, p, sig] = jwt.split(".")
  const header = JSON.parse(Buffer.from(h!, "base64url").toString())
  const claims = JSON.parse(Buffer.from(p!, "base64url").toString())
  const publicKey = key ?? createPublicKey({ key: header.jwk, format: "jwk" })
  const ec = header.alg === "ES256"
  const valid = verify(
    "sha256",
    Buffer.from(`${h}.${p}`),
    ec ? { key: publicKey, dsaEncoding: "ieee-p1363" } : publicKey,
    Buffer.from(sig!, "base64url")
  )
  return { header, claims, valid }
}

/** The RFC 7638 thumbprint of an EC public JWK. */
export const thumbprint = (jwk: Record<string, string>): string =>
  createHash("sha256").update(JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y })).digest("base64url")

export const AS_NONCE = "as-nonce-1"
export const RS_NONCE = "rs-nonce-1"

export interface AuthWorld {
  readonly origin: string
  readonly mcpUrl: string
  readonly issuer: string
  readonly knobs: Knobs
  readonly seen: Array<Seen>
  /** Access tokens issued: token → scopes; delete one to revoke it. */
  readonly accessTokens: Map<string, { scopes: ReadonlyArray<string>; expired: boolean; jkt?: string | undefined }>
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
        dpop: false,
        asNonce: "never",
        rsNonce: "never",
        ...overrides
      }
      const seen: Array<Seen> = []
      const accessTokens = new Map<string, { scopes: ReadonlyArray<string>; expired: boolean; jkt?: string | undefined }>()
      const idJags = new Set<string>()
      const refreshTokens = new Set<string>()
      const issued: Array<string> = []
      const codes = new Map<string, { challenge: string; resource: string; scope: string; clientId: string }>()
      const clients = new Map<string, string>()
      const rtScope = new Map<string, string>()
      const hanging: Array<http.ServerResponse> = []
      let origin = ""

      /** The thumbprint the token gets bound to, or the error answer of a proof that does not pass. */
      let bindTo: string | undefined
      const issueTokens = (scope: string) => {
        const access = fresh("at")
        accessTokens.set(access, { scopes: scope === "" ? [] : scope.split(" "), expired: false, jkt: bindTo })
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
          ...(knobs.cimd ? { client_id_metadata_document_supported: true } : {}),
          ...(knobs.dpop ? { dpop_signing_alg_values_supported: ["ES256"] } : {})
        }
        const tokenType = () => bindTo === undefined ? "Bearer" : "DPoP"
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
          bindTo = undefined
          const proof = req.headers.dpop
          if (knobs.dpop && typeof proof === "string") {
            const checked = checkJwt(proof)
            if (
              !checked.valid || checked.header.typ !== "dpop+jwt" || checked.claims.htm !== "POST" ||
              checked.claims.htu !== `${origin}/token`
            ) return send(400, { error: "invalid_dpop_proof" })
            const refuse = knobs.asNonce === "refused" || knobs.asNonce === "bare" ||
              (knobs.asNonce === "required" && checked.claims.nonce !== AS_NONCE)
            if (refuse) {
              return send(400, { error: "use_dpop_nonce" }, knobs.asNonce === "bare" ? {} : { "dpop-nonce": AS_NONCE })
            }
            bindTo = thumbprint(checked.header.jwk)
          }
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
              token_type: tokenType(),
              refresh_token: refresh,
              ...(knobs.expiresIn === undefined ? {} : { expires_in: knobs.expiresIn }),
              scope: code.scope
            })
          }
          if (grant === "refresh_token") {
            const rt = form.get("refresh_token") ?? ""
            if (!refreshTokens.has(rt)) {
              await knobs.beforeRefreshAnswer?.("refused")
              return send(400, { error: "invalid_grant", error_description: "refresh token revoked" })
            }
            const { access, refresh } = issueTokens(rtScope.get(rt) ?? "")
            rtScope.set(refresh, rtScope.get(rt) ?? "")
            // Rotation: the old refresh token dies and the new one is handed out; otherwise the old one lives on.
            refreshTokens.delete(knobs.rotate ? rt : refresh)
            const type = tokenType()
            await knobs.beforeRefreshAnswer?.("rotated")
            return send(200, {
              access_token: access,
              token_type: type,
              ...(knobs.rotate ? { refresh_token: refresh } : {}),
              ...(knobs.expiresIn === undefined ? {} : { expires_in: knobs.expiresIn })
            })
          }
          if (grant === "client_credentials") {
            const basic = req.headers.authorization?.startsWith("Basic ")
              ? Buffer.from(req.headers.authorization.slice(6), "base64").toString().split(":")
              : undefined
            const assertion = form.get("client_assertion")
            if (knobs.clientKey !== undefined && assertion !== null) {
              const checked = checkJwt(assertion, knobs.clientKey)
              const now = Math.floor(Date.now() / 1000)
              if (
                !checked.valid || form.get("client_assertion_type") !== "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" ||
                checked.claims.iss !== "svc" || checked.claims.sub !== "svc" || checked.claims.aud !== issuer ||
                typeof checked.claims.jti !== "string" || !(checked.claims.exp > now)
              ) return send(401, { error: "invalid_client", error_description: "assertion rejected" })
            } else {
              const [id, secret] = basic ?? [form.get("client_id"), form.get("client_secret")]
              if (id !== "svc" || secret !== knobs.clientSecret) return send(401, { error: "invalid_client" })
            }
            const { access } = issueTokens(form.get("scope") ?? "")
            return send(200, { access_token: access, token_type: tokenType(), expires_in: 3600 })
          }
          if (grant === "urn:ietf:params:oauth:grant-type:jwt-bearer") {
            const assertion = form.get("assertion") ?? ""
            const ok = idJags.has(assertion) ||
              (knobs.assertionKey !== undefined && assertion.split(".").length === 3 &&
                checkJwt(assertion, knobs.assertionKey).valid && checkJwt(assertion, knobs.assertionKey).claims.aud === issuer)
            if (!ok || form.get("resource") !== `${origin}/mcp`) {
              return send(400, { error: "invalid_grant", error_description: "assertion rejected" })
            }
            const { access } = issueTokens(form.get("scope") ?? "")
            return send(200, { access_token: access, token_type: tokenType(), expires_in: 3600 })
          }
          return send(400, { error: "unsupported_grant_type" })
        }
        // The enterprise identity provider's token endpoint: ID token -> ID-JAG.
        if (path === "/idp/token" && req.method === "POST") {
          if (
            form.get("grant_type") !== "urn:ietf:params:oauth:grant-type:token-exchange" ||
            form.get("subject_token") !== "id.token.ok" ||
            form.get("subject_token_type") !== "urn:ietf:params:oauth:token-type:id_token" ||
            form.get("requested_token_type") !== "urn:ietf:params:oauth:token-type:id-jag"
          ) return send(400, { error: "invalid_grant", error_description: "identity token rejected" })
          const jag = `${Buffer.from("{}").toString("base64url")}.${Buffer.from(fresh("jag")).toString("base64url")}.sig`
          idJags.add(jag)
          return send(200, {
            access_token: jag,
            issued_token_type: "urn:ietf:params:oauth:token-type:id-jag",
            token_type: "N_A"
          })
        }
        if (path === "/mcp") {
          const hint = knobs.prm === "hint" || knobs.prm === "hint-missing" ? `, resource_metadata="${knobs.hintOrigin ?? origin}/custom/prm.json"` : ""
          const scope = knobs.challengeScope === undefined ? "" : `, scope="${knobs.challengeScope}"`
          const auth = req.headers.authorization
          const presented = auth?.startsWith("Bearer ") || auth?.startsWith("DPoP ") ? auth.slice(auth.indexOf(" ") + 1) : ""
          const token = accessTokens.get(presented)
          const scheme = knobs.rsScheme ?? (knobs.dpop ? "DPoP" : "Bearer")
          if (token === undefined || token.expired || (token.jkt !== undefined) !== auth?.startsWith("DPoP ")) {
            return send(401, { error: "unauthorized" }, { "www-authenticate": `${scheme} error="invalid_token"${hint}${scope}` })
          }
          if (token.jkt !== undefined) {
            const proof = req.headers.dpop
            const checked = typeof proof === "string" ? checkJwt(proof) : undefined
            if (
              checked === undefined || !checked.valid || thumbprint(checked.header.jwk) !== token.jkt ||
              checked.claims.htm !== req.method || checked.claims.htu !== `${origin}/mcp` ||
              checked.claims.ath !== createHash("sha256").update(presented).digest("base64url")
            ) return send(401, { error: "unauthorized" }, { "www-authenticate": `DPoP error="invalid_dpop_proof"` })
            const refuse = knobs.rsNonce === "refused" || (knobs.rsNonce === "required" && checked.claims.nonce !== RS_NONCE)
            if (refuse) {
              return send(401, { error: "use_dpop_nonce" }, {
                "www-authenticate": `DPoP error="use_dpop_nonce"`,
                "dpop-nonce": RS_NONCE
              })
            }
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
