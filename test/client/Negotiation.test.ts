/**
 * The era classifier: a table per rule (HTTP and stdio), the error mapping,
 * the body parser and the cache, then properties over the whole response
 * space (any status, any body, any outcome).
 */
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Exit, Schema } from "effect"
import { HeaderMismatch, HttpError, MissingClientCapability, UnsupportedProtocolVersion } from "../../src/McpError.ts"
import * as Negotiation from "../../src/client/Negotiation.ts"
import { STATELESS, SUPPORTED } from "../../src/ProtocolVersion.ts"

const { ProbeOutcome, Verdict } = Negotiation
const MODERN = "2026-07-28"

const rpcBody = (code: number, data?: unknown, message = "error") =>
  JSON.stringify({ jsonrpc: "2.0", id: null, error: data === undefined ? { code, message } : { code, message, data } })

const discover = (supportedVersions: ReadonlyArray<unknown>) => ({
  resultType: "complete",
  supportedVersions,
  capabilities: {},
  ttlMs: 0,
  cacheScope: "private"
})

const classify = (
  transport: "http" | "stdio",
  outcome: Negotiation.ProbeOutcome,
  extra: { requested?: string | undefined; stateless?: ReadonlyArray<string> | undefined } = {}
) => Negotiation.classify({ transport, requested: extra.requested ?? MODERN, outcome, stateless: extra.stateless })

/** Two stateless revisions, so a retry with another one can happen. */
const TWO = ["2027-01-01", MODERN]

describe("classify: an answered probe (both transports)", () => {
  const rows: ReadonlyArray<[string, unknown, ReadonlyArray<string> | undefined, string, Partial<Negotiation.Verdict>]> = [
    ["DiscoverResult listing the requested revision", discover([MODERN, "2025-11-25"]), undefined, MODERN, {
      _tag: "Modern",
      version: MODERN
    }],
    ["DiscoverResult listing another stateless revision we speak", discover(["2027-01-01"]), TWO, MODERN, {
      _tag: "Modern",
      version: "2027-01-01"
    }],
    ["DiscoverResult: the newest common one when the requested is missing", discover([MODERN, "2027-01-01"]), [
      "2028-01-01",
      ...TWO
    ], "2028-01-01", { _tag: "Modern", version: "2027-01-01" }],
    ["DiscoverResult listing only handshake revisions", discover(["2025-11-25", "2025-06-18"]), undefined, MODERN, {
      _tag: "Legacy"
    }],
    ["DiscoverResult with non-strings among the revisions", discover([42, null, MODERN]), undefined, MODERN, {
      _tag: "Modern",
      version: MODERN
    }],
    ["a result with a resultType that is not a DiscoverResult", { resultType: "complete" }, undefined, MODERN, {
      _tag: "Modern",
      version: MODERN,
      discover: undefined
    }],
    ["a result without resultType", {}, undefined, MODERN, { _tag: "Legacy" }],
    ["a null result", null, undefined, MODERN, { _tag: "Legacy" }],
    ["a string result", "ok", undefined, MODERN, { _tag: "Legacy" }],
    ["supportedVersions that is not an array", { resultType: "complete", supportedVersions: MODERN }, undefined, MODERN, {
      _tag: "Modern",
      discover: undefined
    }]
  ]
  for (const transport of ["http", "stdio"] as const) {
    for (const [name, result, stateless, requested, expected] of rows) {
      it(`${transport}: ${name} → ${expected._tag}`, () => {
        expect(classify(transport, ProbeOutcome.Answered({ result }), { requested, stateless })).toMatchObject(expected)
      })
    }
  }

  it("a Modern verdict from a DiscoverResult carries it", () => {
    const result = discover([MODERN])
    const verdict = classify("http", ProbeOutcome.Answered({ result }))
    expect(verdict).toEqual(Verdict.Modern({ version: MODERN, discover: result }))
  })

  it("a DiscoverResult naming no revision we speak fails with UnsupportedProtocolVersion", () => {
    const verdict = classify("stdio", ProbeOutcome.Answered({ result: discover(["2099-01-01", "2023-01-01"]) }))
    expect(verdict._tag).toBe("Fail")
    const error = (verdict as Extract<Negotiation.Verdict, { _tag: "Fail" }>).error
    expect(error).toBeInstanceOf(UnsupportedProtocolVersion)
    expect(error).toMatchObject({ requested: MODERN, supported: ["2099-01-01", "2023-01-01"] })
  })

  it("an empty supportedVersions fails", () => {
    expect(classify("http", ProbeOutcome.Answered({ result: discover([]) }))._tag).toBe("Fail")
  })
})

describe("classify: -32022 UnsupportedProtocolVersion", () => {
  const refusal = (data: unknown) => ({ code: -32022, message: "Unsupported protocol version", data })
  const outcomes = (data: unknown) =>
    [
      ["stdio", ProbeOutcome.RpcError(refusal(data))],
      ["http", ProbeOutcome.RpcError(refusal(data))],
      ["http", ProbeOutcome.HttpStatus({ status: 400, contentType: "application/json", body: rpcBody(-32022, data) })]
    ] as const

  const rows: ReadonlyArray<[string, unknown, ReadonlyArray<string> | undefined, Partial<Negotiation.Verdict>]> = [
    ["another stateless revision we speak → retry with it", { requested: MODERN, supported: ["2027-01-01"] }, TWO, {
      _tag: "RetryModern",
      version: "2027-01-01"
    }],
    ["several: the newest common one", { supported: ["2026-07-28", "2027-01-01", "2028-01-01"] }, [
      "2028-01-01",
      "2027-01-01",
      MODERN
    ], { _tag: "RetryModern", version: "2028-01-01" }],
    ["only the requested one → retry it (the caller retries once)", { supported: [MODERN] }, undefined, {
      _tag: "RetryModern",
      version: MODERN
    }],
    ["the requested one and another → the other", { supported: [MODERN, "2027-01-01"] }, TWO, {
      _tag: "RetryModern",
      version: "2027-01-01"
    }],
    ["only handshake revisions we speak → handshake", { supported: ["2025-11-25"] }, undefined, { _tag: "Legacy" }],
    ["a stateless and a handshake one → retry beats the handshake", { supported: ["2027-01-01", "2025-11-25"] }, TWO, {
      _tag: "RetryModern",
      version: "2027-01-01"
    }],
    ["nothing we speak → fail", { supported: ["2099-01-01"] }, undefined, { _tag: "Fail" }],
    ["no data → fail, the server is modern", undefined, undefined, { _tag: "Fail" }],
    ["supported is not an array → fail", { supported: "2025-11-25" }, undefined, { _tag: "Fail" }]
  ]
  for (const [name, data, stateless, expected] of rows) {
    for (const [transport, outcome] of outcomes(data)) {
      it(`${transport} ${outcome._tag}: ${name}`, () => {
        expect(classify(transport, outcome, { stateless })).toMatchObject(expected)
      })
    }
  }

  it("a failure names the revisions the server supports", () => {
    const verdict = classify("stdio", ProbeOutcome.RpcError(refusal({ supported: ["2099-01-01"] })))
    expect((verdict as { error?: unknown }).error).toEqual(
      new UnsupportedProtocolVersion({ requested: MODERN, supported: ["2099-01-01"] })
    )
  })
})

describe("classify: HTTP error statuses", () => {
  const rows: ReadonlyArray<[number, string, Negotiation.Verdict["_tag"]]> = [
    // A modern server's errors: stay modern.
    [400, rpcBody(-32020), "Modern"],
    [400, rpcBody(-32021, { requiredCapabilities: { sampling: {} } }), "Modern"],
    [404, rpcBody(-32601), "Modern"],
    [404, `  \n${rpcBody(-32601)}\n `, "Modern"],
    // Anything else in a 4xx: a legacy server.
    [400, "", "Legacy"],
    [400, "Bad Request: No valid session ID provided", "Legacy"],
    [400, "<html><body>Bad Request</body></html>", "Legacy"],
    [400, rpcBody(-32000, undefined, "Bad Request: Server not initialized"), "Legacy"],
    [400, rpcBody(-32600), "Legacy"],
    [400, rpcBody(-32601), "Legacy"],
    [400, rpcBody(-32602), "Legacy"],
    [400, rpcBody(-32001), "Legacy"],
    [400, rpcBody(-32003), "Legacy"],
    [400, rpcBody(-32004, { supported: [MODERN] }), "Legacy"],
    [404, "", "Legacy"],
    [404, "Not Found", "Legacy"],
    [404, rpcBody(-32001, undefined, "Session not found"), "Legacy"],
    [405, "", "Legacy"],
    [405, rpcBody(-32000, undefined, "Method not allowed."), "Legacy"],
    [406, "Not Acceptable", "Legacy"],
    [415, "", "Legacy"],
    [400, "{not json", "Legacy"],
    [400, "[1,2]", "Legacy"],
    [400, JSON.stringify({ error: "bad" }), "Legacy"],
    [400, JSON.stringify({ error: { code: "-32020" } }), "Legacy"],
    [400, JSON.stringify({ error: { code: -32020.5 } }), "Legacy"],
    // No fallback: authorization, transient refusals, server errors, odd statuses.
    [401, "", "Fail"],
    [401, rpcBody(-32601), "Fail"],
    [403, "Forbidden", "Fail"],
    [403, rpcBody(-32000, undefined, "Invalid Origin"), "Fail"],
    [407, "", "Fail"],
    [408, "", "Fail"],
    [429, "", "Fail"],
    [500, "", "Fail"],
    [500, rpcBody(-32603), "Fail"],
    [502, "<html>Bad Gateway</html>", "Fail"],
    [503, rpcBody(-32022, { supported: ["2025-11-25"] }), "Fail"],
    [302, "", "Fail"],
    [200, "", "Fail"]
  ]
  for (const [status, body, expected] of rows) {
    it(`${status} ${JSON.stringify(body).slice(0, 70)} → ${expected}`, () => {
      expect(classify("http", ProbeOutcome.HttpStatus({ status, body }))._tag).toBe(expected)
    })
  }

  it("a modern 4xx keeps the requested revision", () => {
    expect(classify("http", ProbeOutcome.HttpStatus({ status: 404, body: rpcBody(-32601) }))).toEqual(
      Verdict.Modern({ version: MODERN, discover: undefined })
    )
  })

  it("a refused status fails with an HttpError holding status and body", () => {
    const verdict = classify("http", ProbeOutcome.HttpStatus({ status: 401, body: "no token" }))
    expect(verdict._tag).toBe("Fail")
    const error = (verdict as { error?: unknown }).error
    expect(error).toBeInstanceOf(HttpError)
    expect(error).toMatchObject({ status: 401, body: "no token" })
    expect((verdict as { reason: string }).reason).toMatch(/authorization/)
  })

  it("a refusal for now fails with an HttpError holding the wait it asked for, from the probe's own error", () => {
    const outcome = Negotiation.outcomeOf(Exit.fail(new HttpError({ status: 503, body: "draining", retryAfterMs: 2_000 })))
    expect(outcome).toEqual(ProbeOutcome.HttpStatus({ status: 503, body: "draining", retryAfterMs: 2_000 }))
    const verdict = classify("http", outcome)
    expect(verdict._tag).toBe("Fail")
    expect((verdict as { error?: unknown }).error).toMatchObject({ _tag: "HttpError", status: 503, retryAfterMs: 2_000 })
  })

  it("the content type does not decide: a mislabelled modern error is still read", () => {
    const outcome = ProbeOutcome.HttpStatus({ status: 400, contentType: "text/plain", body: rpcBody(-32020) })
    expect(classify("http", outcome)._tag).toBe("Modern")
  })
})

describe("classify: JSON-RPC errors delivered normally", () => {
  const legacyCodes = [-32601, -32602, -32600, -32603, -32700, -32000, -32001, -32002, -32003, -32004, -32042, 1, 0]
  for (const transport of ["stdio", "http"] as const) {
    for (const code of legacyCodes) {
      it(`${transport}: ${code} → Legacy (the fallback does not hang on one code)`, () => {
        expect(classify(transport, ProbeOutcome.RpcError({ code, message: "x" }))._tag).toBe("Legacy")
      })
    }
    for (const code of [-32020, -32021]) {
      it(`${transport}: ${code} → Modern (only a modern server sends it)`, () => {
        expect(classify(transport, ProbeOutcome.RpcError({ code, message: "x" }))).toEqual(
          Verdict.Modern({ version: MODERN, discover: undefined })
        )
      })
    }
  }
})

describe("classify: no answer", () => {
  it("stdio: a timeout → Legacy (legacy servers may stay silent before initialize)", () => {
    expect(classify("stdio", ProbeOutcome.Timeout())._tag).toBe("Legacy")
  })
  it("http: a timeout → Fail", () => {
    expect(classify("http", ProbeOutcome.Timeout())._tag).toBe("Fail")
  })
  for (const transport of ["stdio", "http"] as const) {
    it(`${transport}: a transport failure → Fail, carrying the error`, () => {
      const error = new Error("ECONNREFUSED")
      expect(classify(transport, ProbeOutcome.TransportFailure({ error }))).toEqual(
        Verdict.Fail({ reason: "the transport failed during the probe", error })
      )
    })
  }
  it("stdio: an HTTP status is not a stdio outcome → Fail", () => {
    expect(classify("stdio", ProbeOutcome.HttpStatus({ status: 400, body: "" }))._tag).toBe("Fail")
  })
  it("a requested revision the client does not speak → Fail, whatever the answer", () => {
    expect(classify("stdio", ProbeOutcome.Answered({ result: discover(["2099-01-01"]) }), { requested: "2099-01-01" })._tag)
      .toBe("Fail")
    expect(classify("stdio", ProbeOutcome.Timeout(), { requested: "2025-11-25" })._tag).toBe("Fail")
  })
})

describe("modernError", () => {
  it("-32020 → HeaderMismatch", () => {
    expect(Negotiation.modernError(-32020, { header: "Mcp-Name" }, "tools/call", "Mcp-Name differs")).toEqual(
      new HeaderMismatch({ method: "tools/call", rpcMessage: "Mcp-Name differs", data: { header: "Mcp-Name" } })
    )
  })
  it("-32021 → MissingClientCapability with data.requiredCapabilities", () => {
    const error = Negotiation.modernError(-32021, { requiredCapabilities: { sampling: {} } }, "tools/call")
    expect(error).toBeInstanceOf(MissingClientCapability)
    expect(error).toMatchObject({ method: "tools/call", requiredCapabilities: { sampling: {} } })
  })
  it("-32021 without data → no capabilities named", () => {
    expect(Negotiation.modernError(-32021, undefined, "m")).toMatchObject({ requiredCapabilities: {} })
  })
  it("-32022 → UnsupportedProtocolVersion with requested and supported", () => {
    expect(Negotiation.modernError(-32022, { requested: MODERN, supported: ["2025-11-25", 7] }, "server/discover"))
      .toEqual(new UnsupportedProtocolVersion({ requested: MODERN, supported: ["2025-11-25"] }))
  })
  it("-32022 without data still maps", () => {
    expect(Negotiation.modernError(-32022, null, "m")).toBeInstanceOf(UnsupportedProtocolVersion)
  })
  it("other codes → undefined", () => {
    for (const code of [-32601, -32000, -32001, -32003, -32004, -32023, 0]) {
      expect(Negotiation.modernError(code, {}, "m")).toBeUndefined()
    }
  })
})

describe("rpcErrorFromHttpBody", () => {
  it("reads a JSON-RPC error, with or without id and jsonrpc, around whitespace", () => {
    expect(Negotiation.rpcErrorFromHttpBody(rpcBody(-32022, { supported: [] }, "nope"))).toEqual({
      code: -32022,
      message: "nope",
      data: { supported: [] }
    })
    expect(Negotiation.rpcErrorFromHttpBody(`\r\n\t {"error":{"code":-32601,"message":"m"}} \n`)).toEqual({
      code: -32601,
      message: "m",
      data: undefined
    })
    expect(Negotiation.rpcErrorFromHttpBody(`{"error":{"code":-32020}}`)).toEqual({
      code: -32020,
      message: "",
      data: undefined
    })
  })
  it("is undefined for anything else", () => {
    for (
      const body of [
        "",
        "   ",
        "Not Found",
        "<html></html>",
        "{",
        "null",
        "[]",
        `[{"error":{"code":-32020}}]`,
        `{"result":{}}`,
        `{"error":null}`,
        `{"error":{"message":"no code"}}`,
        `{"error":{"code":"-32020"}}`,
        `{"error":{"code":1.5}}`,
        `{"error":{"code":-32020}} trailing`
      ]
    ) {
      expect(Negotiation.rpcErrorFromHttpBody(body), body).toBeUndefined()
    }
  })
})

describe("EraCache", () => {
  it("stores, reads and forgets per identity", () => {
    const cache = Negotiation.make()
    const a = Negotiation.identityOfHttp("http://127.0.0.1:3000/mcp")
    const b = Negotiation.identityOfHttp("http://127.0.0.1:3001/mcp")
    expect(Negotiation.get(cache, a)).toBeUndefined()
    Negotiation.set(cache, a, { era: "modern", version: MODERN })
    Negotiation.set(cache, b, { era: "legacy", version: "2025-11-25" })
    expect(Negotiation.get(cache, a)).toEqual({ era: "modern", version: MODERN })
    expect(Negotiation.get(cache, b)).toEqual({ era: "legacy", version: "2025-11-25" })
    Negotiation.invalidate(cache, a)
    expect(Negotiation.get(cache, a)).toBeUndefined()
    expect(Negotiation.get(cache, b)).toBeDefined()
  })

  it("caches are independent of each other and of the global one", () => {
    const one = Negotiation.make()
    const two = Negotiation.make()
    Negotiation.set(one, "x", { era: "modern", version: MODERN })
    expect(Negotiation.get(two, "x")).toBeUndefined()
    expect(Negotiation.get(Negotiation.global, "x")).toBeUndefined()
  })

  it("HTTP identity: origin and path, normalised; query and fragment dropped", () => {
    const id = Negotiation.identityOfHttp
    expect(id("https://Example.COM:443/mcp?token=1#x")).toBe("https://example.com/mcp")
    expect(id(new URL("http://127.0.0.1:8080/mcp"))).toBe("http://127.0.0.1:8080/mcp")
    expect(id("http://127.0.0.1:8080/a")).not.toBe(id("http://127.0.0.1:8080/b"))
    expect(id("http://127.0.0.1:8080/mcp")).not.toBe(id("https://127.0.0.1:8080/mcp"))
    expect(id("not a url")).toBe("not a url")
  })

  it("stdio identity: the command line and cwd, unambiguous", () => {
    const id = Negotiation.identityOfStdio
    expect(id("node", ["server.js"])).toBe(id("node", ["server.js"]))
    expect(id("node", ["a b"])).not.toBe(id("node", ["a", "b"]))
    expect(id("node", ["server.js"], "/srv")).not.toBe(id("node", ["server.js"]))
    expect(id("node")).toBe(id("node", []))
  })
})

// ---------------------------------------------------------------------------
// Properties over the response space

const int = (minimum: number, maximum: number) =>
  Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum, maximum }))).pipe(Arbitrary.map((n) => n + 0))
const pick = <const A extends ReadonlyArray<string | number>>(values: A): Arbitrary.Arbitrary<A[number]> =>
  Arbitrary.schema(Schema.Literals(values))

const versionArb = pick([MODERN, "2027-01-01", "2099-01-01", ...SUPPORTED, "2023-01-01", "latest"])
const versionsArb = Arbitrary.array(versionArb, { maxLength: 4 })
const codeArb = Arbitrary.all({ known: pick([-32020, -32021, -32022, -32601, -32602, -32600, -32603, -32700, -32000, -32001, -32003, -32004, -32042]), any: int(-33000, 1000), useAny: Arbitrary.schema(Schema.Boolean) }).pipe(
  Arbitrary.map(({ any, known, useAny }) => (useAny ? any : known))
)
const dataArb = Arbitrary.all({ supported: versionsArb, shape: pick(["object", "none", "string"]) }).pipe(
  Arbitrary.map(({ shape, supported }) =>
    shape === "object" ? { requested: MODERN, supported } : shape === "string" ? "junk" : undefined
  )
)
const bodyArb = Arbitrary.all({
  kind: pick(["rpc", "empty", "html", "text", "json", "discover"]),
  code: codeArb,
  data: dataArb,
  text: Arbitrary.schema(Schema.String),
  pad: pick(["", " ", "\n", "\r\n\t"])
}).pipe(Arbitrary.map(({ code, data, kind, pad, text }) => {
  switch (kind) {
    case "rpc":
      return pad + rpcBody(code, data) + pad
    case "empty":
      return pad
    case "html":
      return `<html><body>${text}</body></html>`
    case "text":
      return text
    case "json":
      return JSON.stringify({ text })
    case "discover":
      return JSON.stringify({ jsonrpc: "2.0", id: 1, result: discover([MODERN]) })
  }
}))
const statusArb = Arbitrary.all({
  common: pick([400, 401, 403, 404, 405, 406, 407, 408, 409, 415, 422, 429, 500, 502, 503, 504]),
  any: int(100, 599),
  useAny: Arbitrary.schema(Schema.Boolean)
}).pipe(Arbitrary.map(({ any, common, useAny }) => (useAny ? any : common)))
const resultArb = Arbitrary.all({ kind: pick(["discover", "typed", "bare", "null"]), versions: versionsArb }).pipe(
  Arbitrary.map(({ kind, versions }) =>
    kind === "discover"
      ? discover(versions)
      : kind === "typed"
      ? { resultType: "complete" }
      : kind === "bare"
      ? {}
      : null
  )
)
const outcomeArb = Arbitrary.all({
  tag: pick(["Answered", "RpcError", "HttpStatus", "Timeout", "TransportFailure"]),
  result: resultArb,
  code: codeArb,
  data: dataArb,
  status: statusArb,
  body: bodyArb
}).pipe(Arbitrary.map(({ body, code, data, result, status, tag }): Negotiation.ProbeOutcome => {
  switch (tag) {
    case "Answered":
      return ProbeOutcome.Answered({ result })
    case "RpcError":
      return ProbeOutcome.RpcError({ code, message: "m", data })
    case "HttpStatus":
      return ProbeOutcome.HttpStatus({ status, body })
    case "Timeout":
      return ProbeOutcome.Timeout()
    case "TransportFailure":
      return ProbeOutcome.TransportFailure({ error: new Error("gone") })
  }
}))
const speaksArb = pick(["default", "two"]).pipe(
  Arbitrary.map((which) => (which === "default" ? { stateless: STATELESS, requested: MODERN } : { stateless: TWO, requested: MODERN }))
)
const caseArb = Arbitrary.all({ transport: pick(["http", "stdio"]), outcome: outcomeArb, speaks: speaksArb })

const runs = { arbitrary: { runs: 2000 } }

/** A -32022 whose `supported` names a handshake revision we speak and no stateless one: the one modern error that leads to the handshake. */
const refusalPointsToHandshake = (data: unknown, stateless: ReadonlyArray<string>) => {
  const supported = typeof data === "object" && data !== null ? (data as { supported?: unknown }).supported : undefined
  return Array.isArray(supported) && supported.some((v) => (SUPPORTED as ReadonlyArray<unknown>).includes(v)) &&
    !supported.some((v) => stateless.includes(v))
}

describe("classify: properties", () => {
  it.prop("the verdict's revision is always a stateless one the client speaks", { c: caseArb }, ({ c }) => {
    const verdict = Negotiation.classify({ transport: c.transport, requested: c.speaks.requested, outcome: c.outcome, stateless: c.speaks.stateless })
    if (verdict._tag === "Modern" || verdict._tag === "RetryModern") {
      expect(c.speaks.stateless).toContain(verdict.version)
    }
    if (verdict._tag === "RetryModern" && verdict.version === c.speaks.requested) {
      // The refused revision is asked for again only when the server lists no other one we speak.
      const error = c.outcome._tag === "RpcError"
        ? c.outcome
        : c.outcome._tag === "HttpStatus"
        ? Negotiation.rpcErrorFromHttpBody(c.outcome.body)
        : undefined
      const data = error?.data as { supported?: unknown } | undefined
      const listed = Array.isArray(data?.supported) ? data.supported : []
      expect(listed).toContain(c.speaks.requested)
      expect(listed.filter((v) => v !== c.speaks.requested && c.speaks.stateless.includes(v))).toEqual([])
    }
  }, runs)

  it.prop("401, 403, 5xx, an HTTP timeout and a transport failure never lead to the handshake", { c: caseArb }, ({ c }) => {
    const verdict = Negotiation.classify({ transport: c.transport, requested: c.speaks.requested, outcome: c.outcome, stateless: c.speaks.stateless })
    const o = c.outcome
    const never = o._tag === "TransportFailure" ||
      (c.transport === "http" && o._tag === "Timeout") ||
      (o._tag === "HttpStatus" && (o.status === 401 || o.status === 403 || o.status >= 500))
    if (never) expect(verdict._tag).toBe("Fail")
  }, runs)

  it.prop("on HTTP, a body with -32020/-32021/-32022 never leads to the handshake (unless -32022 names only handshake revisions)", {
    status: statusArb,
    code: pick([-32020, -32021, -32022]),
    data: dataArb,
    pad: pick(["", " ", "\n"])
  }, ({ code, data, pad, status }) => {
    const verdict = classify("http", ProbeOutcome.HttpStatus({ status, body: pad + rpcBody(code, data) + pad }))
    if (code === -32022 && refusalPointsToHandshake(data, STATELESS)) return
    expect(verdict._tag).not.toBe("Legacy")
  }, runs)

  it.prop("a JSON-RPC error with a code outside -32020…-32022 always leads to the handshake", {
    transport: pick(["http", "stdio"]),
    code: codeArb,
    data: dataArb
  }, ({ code, data, transport }) => {
    if (code === -32020 || code === -32021 || code === -32022) return
    expect(classify(transport, ProbeOutcome.RpcError({ code, message: "m", data }))._tag).toBe("Legacy")
  }, runs)

  it.prop("on HTTP, a 4xx other than 401/403/407/408/429 without a modern error body leads to the handshake", {
    status: int(400, 499),
    body: bodyArb
  }, ({ body, status }) => {
    if ([401, 403, 407, 408, 429].includes(status)) return
    const error = Negotiation.rpcErrorFromHttpBody(body)
    const modern = error !== undefined &&
      ([-32020, -32021, -32022].includes(error.code) || (status === 404 && error.code === -32601))
    if (!modern) expect(classify("http", ProbeOutcome.HttpStatus({ status, body }))._tag).toBe("Legacy")
  }, runs)

  it.prop("classify is pure: the same input gives an equal verdict", { c: caseArb }, ({ c }) => {
    const input = { transport: c.transport, requested: c.speaks.requested, outcome: c.outcome, stateless: c.speaks.stateless }
    expect(Negotiation.classify(input)).toEqual(Negotiation.classify(input))
  }, { arbitrary: { runs: 300 } })
})
