/**
 * JWS signature checks with node:crypto for every algorithm the JWT
 * verifier accepts, and the key/algorithm pairing that stops a token from
 * choosing how it is checked.
 */
import * as crypto from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import * as Jws from "../../../src/server/auth/internal/Jws.ts"

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")

const pairs = {
  RS256: () => crypto.generateKeyPairSync("rsa", { modulusLength: 2048 }),
  PS256: () => crypto.generateKeyPairSync("rsa", { modulusLength: 2048 }),
  ES256: () => crypto.generateKeyPairSync("ec", { namedCurve: "P-256" }),
  ES384: () => crypto.generateKeyPairSync("ec", { namedCurve: "P-384" }),
  EdDSA: () => crypto.generateKeyPairSync("ed25519")
} as const

const signWith = (alg: keyof typeof pairs, key: crypto.KeyObject, input: string): Buffer => {
  switch (alg) {
    case "RS256":
      return crypto.sign("sha256", Buffer.from(input), key)
    case "PS256":
      return crypto.sign("sha256", Buffer.from(input), {
        key,
        padding: crypto.constants.RSA_PKCS1_PSS_PADDING,
        saltLength: crypto.constants.RSA_PSS_SALTLEN_DIGEST
      })
    case "ES256":
      return crypto.sign("sha256", Buffer.from(input), { key, dsaEncoding: "ieee-p1363" })
    case "ES384":
      return crypto.sign("sha384", Buffer.from(input), { key, dsaEncoding: "ieee-p1363" })
    case "EdDSA":
      return crypto.sign(null, Buffer.from(input), key)
  }
}

describe("Jws", () => {
  for (const alg of Object.keys(pairs) as Array<keyof typeof pairs>) {
    it(`${alg}: a signature by the private key verifies with the JWK's public key; a changed payload does not`, () => {
      const { privateKey, publicKey } = pairs[alg]()
      const jwk = publicKey.export({ format: "jwk" }) as Jws.Jwk
      expect(Jws.keyFits(jwk, alg)).toBe(true)
      const input = `${b64({ alg })}.${b64({ sub: "a" })}`
      const token = `${input}.${signWith(alg, privateKey, input).toString("base64url")}`
      const decoded = Jws.decode(token)
      if (typeof decoded === "string") throw new Error(decoded)
      const key = Jws.publicKey(jwk)!
      expect(Jws.verifySignature(alg, key, decoded.signingInput, decoded.signature)).toBe(true)
      const forged = Jws.decode(`${input.split(".")[0]}.${b64({ sub: "b" })}.${token.split(".")[2]}`)
      if (typeof forged === "string") throw new Error(forged)
      expect(Jws.verifySignature(alg, key, forged.signingInput, forged.signature)).toBe(false)
    })
  }

  it("a key fits only the algorithms of its type, curve, declared alg and use", () => {
    const rsa = crypto.generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey.export({ format: "jwk" }) as Jws.Jwk
    const p384 = crypto.generateKeyPairSync("ec", { namedCurve: "P-384" }).publicKey.export({ format: "jwk" }) as Jws.Jwk
    expect(Jws.keyFits(rsa, "ES256")).toBe(false)
    expect(Jws.keyFits(rsa, "HS256")).toBe(false)
    expect(Jws.keyFits(rsa, "none")).toBe(false)
    expect(Jws.keyFits(p384, "ES256")).toBe(false)
    expect(Jws.keyFits({ ...rsa, alg: "RS256" }, "PS256")).toBe(false)
    expect(Jws.keyFits({ ...rsa, use: "enc" }, "RS256")).toBe(false)
    expect(Jws.keyFits({ ...rsa, use: "sig", alg: "RS256" }, "RS256")).toBe(true)
  })

  it("takes only the public members of a JWK, and refuses what is not a JWS", () => {
    const { privateKey } = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" })
    const jwk = privateKey.export({ format: "jwk" }) as Jws.Jwk
    expect(Jws.publicKey(jwk)?.type).toBe("public")
    expect(Jws.publicKey({ kty: "oct", k: "c2VjcmV0" })).toBeUndefined()
    expect(Jws.decode("a.b")).toBeTypeOf("string")
    expect(Jws.decode(`${b64([1])}.${b64({})}.`)).toBe("malformed JOSE header")
    expect(Jws.decode(`${b64({ alg: "RS256" })}.${b64({})}.!!`)).toBe("malformed signature")
  })
})
