/**
 * URI templates (RFC 6570) for resource templates, read in reverse: which
 * variables a concrete URI was expanded from. Level 1 (`{var}`) and the
 * level 2 operators `{+var}` (reserved characters kept, so `/` may occur)
 * and `{#var}` (a fragment) are understood; other operators are refused
 * when the template is defined, since matching them is ambiguous.
 */

export interface UriTemplate {
  readonly template: string
  readonly variables: ReadonlyArray<string>
  /** The variables `uri` was expanded from, percent-decoded; `undefined` when it does not match. */
  readonly match: (uri: string) => Readonly<Record<string, string>> | undefined
}

const UNRESERVED = "A-Za-z0-9\\-._~"
const RESERVED = ":/?#\\[\\]@!$&'()*+,;="
const PCT = "%[0-9A-Fa-f]{2}"
const VARNAME = /^(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*$/

const escape = (literal: string) => literal.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** Parses `template`; a string is the reason it is refused. */
export const parse = (template: string): UriTemplate | string => {
  const variables: Array<string> = []
  let pattern = "^"
  let at = 0
  for (const m of template.matchAll(/\{([^}]*)\}/g)) {
    pattern += escape(template.slice(at, m.index))
    at = m.index + m[0].length
    const body = m[1]
    const operator = body[0] === "+" || body[0] === "#" ? body[0] : ""
    const name = body.slice(operator.length)
    if (!VARNAME.test(name)) {
      return `has the expression {${body}}: only {name}, {+name} and {#name} are supported`
    }
    if (variables.includes(name)) return `names the variable ${name} twice`
    variables.push(name)
    const chars = operator === "" ? `(?:[${UNRESERVED}]|${PCT})*` : `(?:[${UNRESERVED}${RESERVED}]|${PCT})*`
    pattern += operator === "#" ? `(?:#(${chars}))?` : `(${chars})`
  }
  const rest = template.slice(at)
  if (rest.includes("{") || rest.includes("}")) return "has an unbalanced brace"
  pattern += escape(rest) + "$"
  const regex = new RegExp(pattern)
  return {
    template,
    variables,
    match: (uri: string) => {
      const found = regex.exec(uri)
      if (found === null) return undefined
      const out: Record<string, string> = {}
      for (const [i, name] of variables.entries()) {
        try {
          out[name] = decodeURIComponent(found[i + 1] ?? "")
        } catch {
          return undefined
        }
      }
      return out
    }
  }
}
