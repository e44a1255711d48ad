/**
 * Content blocks (of a tool result, a prompt message, an embedded resource)
 * and resource contents as the commands print them.
 */
import type * as McpSchema from "effect/ai/McpSchema"

export type Content = McpSchema.CallToolResult["content"][number]

/** The length of base64 data once decoded. */
export const bytes = (base64: string): number => Math.floor((base64.length * 3) / 4) - (base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0)

/** One content block as text: text as is, other blocks summarised (`[image image/png, 68 bytes]`). */
export const describe = (c: Content): string => {
  const block = c as { type: string } & Record<string, any>
  switch (block.type) {
    case "text":
      return String(block.text)
    case "image":
    case "audio":
      return `[${block.type} ${block.mimeType}, ${bytes(String(block.data))} bytes]`
    case "resource_link":
      return `[resource link ${block.uri}${block.name === undefined ? "" : ` (${block.name})`}]`
    case "resource": {
      const r = block.resource as Record<string, any>
      if (typeof r.text === "string") return r.text
      return `[resource ${r.uri}${r.mimeType === undefined ? "" : ` ${r.mimeType}`}, ${bytes(String(r.blob ?? ""))} bytes]`
    }
    default:
      return `[${block.type} content]`
  }
}


type ResourceContents = McpSchema.ReadResourceResult["contents"][number]

/** A resource's contents: text as is, a blob summarised (`[blob example://logo image/png, 68 bytes]`). */
export const describeResource = (contents: ResourceContents): string => {
  const r = contents as Record<string, any>
  if (typeof r.text === "string") return r.text
  return `[blob ${r.uri}${r.mimeType === undefined ? "" : ` ${r.mimeType}`}, ${bytes(String(r.blob ?? ""))} bytes]`
}
