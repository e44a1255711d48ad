/**
 * What a language model is sent for a tool call's result: the content
 * blocks as `effect/ai` prompt parts (text as text; images, audio and
 * binary resources as files; resource links as their name and URI), or the
 * structured content as JSON when there are no blocks.
 */
import * as Prompt from "effect/ai/Prompt"

const text = (value: string): Prompt.ToolModelOutputPart => Prompt.textPart({ text: value })

/** Binary content arrives decoded (bytes); a peer's raw base64 text is passed on as it is. */
const file = (mediaType: string, raw: unknown, fileName?: string): Prompt.ToolModelOutputPart => {
  const data = raw instanceof Uint8Array ? raw : String(raw)
  return Prompt.filePart(fileName === undefined ? { mediaType, data } : { mediaType, data, fileName })
}

type Block = { readonly type?: unknown } & Record<string, unknown>

const blockOutput = (block: Block): Prompt.ToolModelOutputPart => {
  switch (block.type) {
    case "text":
      return text(String(block.text))
    case "image":
    case "audio":
      return file(String(block.mimeType), block.data)
    case "resource": {
      const resource = (block.resource ?? {}) as Record<string, unknown>
      return typeof resource.text === "string"
        ? text(resource.text)
        : file(String(resource.mimeType ?? "application/octet-stream"), resource.blob, String(resource.uri))
    }
    case "resource_link":
      return text(`${String(block.title ?? block.name)}: ${String(block.uri)}`)
    default:
      return text(JSON.stringify(block))
  }
}

/** The parts for a successful call's result (`AiToolkit.toModelOutput`). */
export const toModelOutput = (
  result: { readonly content: ReadonlyArray<unknown>; readonly structuredContent?: unknown }
): ReadonlyArray<Prompt.ToolModelOutputPart> =>
  result.content.length === 0
    ? [text(result.structuredContent === undefined ? "" : JSON.stringify(result.structuredContent))]
    : result.content.map((block) => blockOutput(block as Block))

/** A tool error's content as one text: its text blocks as they are, any other block as JSON. */
export const contentText = (content: ReadonlyArray<unknown>): string =>
  content.map((block) => {
    const b = block as Block
    return b.type === "text" ? String(b.text) : JSON.stringify(b)
  }).join("\n")
