/**
 * Newline-delimited framing over raw bytes, for both directions of stdio.
 *
 * Chunks are kept as they arrive and joined once per line, so the cost stays
 * linear in the bytes received however a large message is split. Lines are
 * decoded as UTF-8 only when complete, so a multi-byte character split across
 * chunks survives. A line longer than the limit is reported once and skipped
 * up to its newline, without buffering it.
 */

export type Frame =
  | { readonly _tag: "Line"; readonly text: string }
  | { readonly _tag: "TooLarge"; readonly size: number }

export interface LineFramer {
  /** Feeds a chunk; calls `onFrame` for every complete line (blank lines are skipped). */
  readonly push: (chunk: Uint8Array, onFrame: (frame: Frame) => void) => void
  /** Bytes held for the line in progress. */
  readonly buffered: () => number
  /** What is left when the input ends: a final line without a newline, if any. */
  readonly end: (onFrame: (frame: Frame) => void) => void
}

const NEWLINE = 0x0a
const decoder = new TextDecoder("utf-8")

const emitLine = (bytes: Uint8Array, onFrame: (frame: Frame) => void) => {
  let end = bytes.length
  if (end > 0 && bytes[end - 1] === 0x0d) end-- // CRLF from Windows peers
  let start = 0
  // Skip whitespace-only lines cheaply without decoding them.
  while (start < end && (bytes[start] === 0x20 || bytes[start] === 0x09 || bytes[start] === 0x0d)) start++
  if (start === end) return
  onFrame({ _tag: "Line", text: decoder.decode(start === 0 && end === bytes.length ? bytes : bytes.subarray(start, end)) })
}

export const make = (maxBytes: number): LineFramer => {
  let parts: Array<Uint8Array> = []
  let size = 0
  /** True while skipping the rest of an oversized line. */
  let discarding = false

  const push = (chunk: Uint8Array, onFrame: (frame: Frame) => void) => {
    let offset = 0
    while (offset < chunk.length) {
      const nl = chunk.indexOf(NEWLINE, offset)
      if (nl === -1) {
        const rest = chunk.length - offset
        if (discarding) return
        if (size + rest > maxBytes) {
          onFrame({ _tag: "TooLarge", size: size + rest })
          parts = []
          size = 0
          discarding = true
          return
        }
        parts.push(offset === 0 ? chunk : chunk.subarray(offset))
        size += rest
        return
      }
      const piece = chunk.subarray(offset, nl)
      offset = nl + 1
      if (discarding) {
        discarding = false
        continue
      }
      if (size + piece.length > maxBytes) {
        onFrame({ _tag: "TooLarge", size: size + piece.length })
        parts = []
        size = 0
        continue
      }
      if (size === 0) {
        emitLine(piece, onFrame)
      } else {
        parts.push(piece)
        emitLine(concat(parts, size + piece.length), onFrame)
        parts = []
        size = 0
      }
    }
  }

  const end = (onFrame: (frame: Frame) => void) => {
    if (!discarding && size > 0) emitLine(concat(parts, size), onFrame)
    parts = []
    size = 0
    discarding = false
  }

  return { push, end, buffered: () => size }
}

const concat = (parts: ReadonlyArray<Uint8Array>, total: number): Uint8Array => {
  if (parts.length === 1) return parts[0]!
  const out = new Uint8Array(total)
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

const encoder = new TextEncoder()

/** One message as a framed line. JSON.stringify never emits a raw newline, so framing is safe. */
export const encodeLine = (message: unknown): string => JSON.stringify(message) + "\n"

export const encodeLines = (messages: ReadonlyArray<unknown>): Uint8Array => {
  let text = ""
  for (const m of messages) text += JSON.stringify(m) + "\n"
  return encoder.encode(text)
}
