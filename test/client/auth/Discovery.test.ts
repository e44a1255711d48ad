/**
 * The pure parts of discovery: the Bearer challenge, the well-known URLs in
 * the spec's order, and which resource a token may be sent to.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Discovery from "../../../src/client/auth/Discovery.ts"
import * as WwwAuthenticate from "../../../src/client/auth/WwwAuthenticate.ts"

describe("WWW-Authenticate", () => {
  it("reads the Bearer challenge's parameters, quoted or not, among other challenges", () => {
    expect(
      WwwAuthenticate.parse(
        `Basic realm="x", Bearer error="insufficient_scope", scope="a b", resource_metadata="https://s/prm", error_description=bad`
      )
    ).toEqual({ error: "insufficient_scope", scope: "a b", resourceMetadata: "https://s/prm", errorDescription: "bad" })
    expect(WwwAuthenticate.parse(`bearer scope="say \\"hi\\""`).scope).toBe(`say "hi"`)
    expect(WwwAuthenticate.parse(`Basic realm="x"`)).toEqual({})
    expect(WwwAuthenticate.parse(undefined)).toEqual({})
  })

  it("reads a DPoP challenge like a Bearer one: its resource metadata and use_dpop_nonce", () => {
    expect(WwwAuthenticate.parse(`DPoP resource_metadata="https://s/prm"`)).toEqual({ resourceMetadata: "https://s/prm", dpop: true })
    expect(WwwAuthenticate.parse(`DPoP error="use_dpop_nonce", error_description="Resource server requires nonce"`).error)
      .toBe("use_dpop_nonce")
    expect(WwwAuthenticate.parse(`Bearer scope="a", DPoP error="use_dpop_nonce"`).error).toBeUndefined()
  })

  it("says whether any challenge offers the DPoP scheme, which decides DPoP-bound tokens in auto mode", () => {
    expect(WwwAuthenticate.parse(`Bearer scope="a", DPoP algs="ES256"`).dpop).toBe(true)
    expect(WwwAuthenticate.parse(`DPoP`).dpop).toBe(true)
    expect(WwwAuthenticate.parse(`Bearer resource_metadata="https://s/prm"`).dpop).toBeUndefined()
    expect(WwwAuthenticate.parse(`Bearer dpop="x"`).dpop).toBeUndefined()
  })
})

describe("discovery URLs", () => {
  it("protected resource metadata: the hint alone, else path-aware then root", () => {
    expect(Discovery.resourceMetadataUrls("https://s.example/a/mcp", { resourceMetadata: "https://s.example/m" }))
      .toEqual(["https://s.example/m"])
    expect(Discovery.resourceMetadataUrls("https://s.example/a/mcp/", {})).toEqual([
      "https://s.example/.well-known/oauth-protected-resource/a/mcp",
      "https://s.example/.well-known/oauth-protected-resource"
    ])
    expect(Discovery.resourceMetadataUrls("https://s.example", {})).toEqual([
      "https://s.example/.well-known/oauth-protected-resource"
    ])
  })

  it("authorization server metadata: OAuth then OpenID, inserted then appended for an issuer with a path", () => {
    expect(Discovery.serverMetadataUrls("https://as.example")).toEqual([
      "https://as.example/.well-known/oauth-authorization-server",
      "https://as.example/.well-known/openid-configuration"
    ])
    expect(Discovery.serverMetadataUrls("https://as.example/t1")).toEqual([
      "https://as.example/.well-known/oauth-authorization-server/t1",
      "https://as.example/.well-known/openid-configuration/t1",
      "https://as.example/t1/.well-known/openid-configuration"
    ])
  })

  it("a token for a resource goes to that resource and the paths under it only", () => {
    expect(Discovery.resourceCovers("https://s.example/mcp", "https://s.example/mcp")).toBe(true)
    expect(Discovery.resourceCovers("https://s.example", "https://s.example/mcp")).toBe(true)
    expect(Discovery.resourceCovers("https://s.example/mcp", "https://s.example/mcpx")).toBe(false)
    expect(Discovery.resourceCovers("https://s.example/mcp", "http://s.example/mcp")).toBe(false)
    expect(Discovery.resourceCovers("https://s.example/mcp", "https://evil.example/mcp")).toBe(false)
  })
})
