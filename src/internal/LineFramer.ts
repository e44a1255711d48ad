/**
 * Newline-delimited framing over raw bytes, for both directions of stdio.
 *
 * The complete lines of a chunk are decoded as UTF-8 in one go and split as
 * text, so a chunk of 32 responses costs one decode, not 32. A line split
 * across chunks is kept as bytes until its newline arrives and joined once,
 * so the cost stays linear however a large message is cut, and a multi-byte
 * character split across chunks survives (a newline byte never occurs inside
 * one). A line longer than the limit is reported once and skipped up to its
 * newline, without buffering it.
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
// The typed-array builtins: Buffer's own `indexOf` goes through a slower, more general path.
const indexOfByte = (bytes: Uint8Array, from: number): number => Uint8Array.prototype.indexOf.call(bytes, NEWLINE, from)
const lastIndexOfByte = (bytes: Uint8Array): number => Uint8Array.prototype.lastIndexOf.call(bytes, NEWLINE)

const asBuffer = (bytes: Uint8Array): Buffer =>
  Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)

/** Emits `text[start, end)` as a line: a CR before the newline and leading blanks (and a BOM) go; a blank line is skipped. */
const emitText = (text: string, start: number, end: number, onFrame: (frame: Frame) => void) => {
  if (end > start && text.charCodeAt(end - 1) === 0x0d) end-- // CRLF from Windows peers
  let c: number
  while (start < end && ((c = text.charCodeAt(start)) === 0x20 || c === 0x09 || c === 0x0d || c === 0xfeff)) start++
  if (start === end) return
  onFrame({ _tag: "Line", text: start === 0 && end === text.length ? text : text.slice(start, end) })
}

export const make = (maxBytes: number): LineFramer => {
  let parts: Array<Uint8Array> = []
  let size = 0
  /** True while skipping the rest of an oversized line. */
  let discarding = false

  const tooLarge = (bytes: number, onFrame: (frame: Frame) => void) => {
    onFrame({ _tag: "TooLarge", size: bytes })
  }

  /** Holds the start of a line whose newline has not come yet. */
  const keep = (bytes: Uint8Array, from: number, onFrame: (frame: Frame) => void) => {
    const rest = bytes.length - from
    if (discarding || rest === 0) return
    if (size + rest > maxBytes) {
      tooLarge(size + rest, onFrame)
      parts = []
      size = 0
      discarding = true
      return
    }
    parts.push(from === 0 ? bytes : bytes.subarray(from))
    size += rest
  }

  /** Ends the held line at `nl`, the first newline of `bytes`. */
  const finishHeld = (bytes: Buffer, nl: number, onFrame: (frame: Frame) => void) => {
    if (discarding) {
      discarding = false
      return
    }
    const total = size + nl
    if (total > maxBytes) tooLarge(total, onFrame)
    else {
      parts.push(bytes.subarray(0, nl))
      const text = concat(parts, total).toString("utf8")
      emitText(text, 0, text.length, onFrame)
    }
    parts = []
    size = 0
  }

  /** The whole lines in `bytes[from, last]`, `last` being the chunk's last newline. */
  const emitWhole = (bytes: Buffer, from: number, last: number, onFrame: (frame: Frame) => void) => {
    const text = bytes.toString("utf8", from, last)
    if (last - from <= maxBytes) {
      // No line can be over the limit: split the text alone.
      let start = 0
      let nl: number
      while ((nl = text.indexOf("\n", start)) !== -1) {
        emitText(text, start, nl, onFrame)
        start = nl + 1
      }
      emitText(text, start, text.length, onFrame)
      return
    }
    // Some line may be: measure each in bytes while walking the text in step.
    let byteStart = from
    let textStart = 0
    for (;;) {
      const byteEnd = Math.min(indexOfByte(bytes, byteStart), last)
      const textEnd = byteEnd === last ? text.length : text.indexOf("\n", textStart)
      if (byteEnd - byteStart > maxBytes) tooLarge(byteEnd - byteStart, onFrame)
      else emitText(text, textStart, textEnd, onFrame)
      if (byteEnd === last) return
      byteStart = byteEnd + 1
      textStart = textEnd + 1
    }
  }

  const push = (chunk: Uint8Array, onFrame: (frame: Frame) => void) => {
    const bytes = asBuffer(chunk)
    let from = 0
    if (size > 0 || discarding) {
      const nl = indexOfByte(bytes, 0)
      if (nl === -1) return keep(bytes, 0, onFrame)
      finishHeld(bytes, nl, onFrame)
      from = nl + 1
    }
    const last = lastIndexOfByte(bytes)
    if (last >= from) {
      emitWhole(bytes, from, last, onFrame)
      from = last + 1
    }
    if (from < bytes.length) keep(bytes, from, onFrame)
  }

  const end = (onFrame: (frame: Frame) => void) => {
    if (!discarding && size > 0) {
      const text = concat(parts, size).toString("utf8")
      emitText(text, 0, text.length, onFrame)
    }
    parts = []
    size = 0
    discarding = false
  }

  return { push, end, buffered: () => size }
}

const concat = (parts: ReadonlyArray<Uint8Array>, total: number): Buffer => {
  if (parts.length === 1) return asBuffer(parts[0]!)
  const out = Buffer.allocUnsafe(total)
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}


/** One message as a framed line. JSON.stringify never emits a raw newline, so framing is safe. */
export const encodeLine = (message: unknown): string => JSON.stringify(message) + "\n"
