/** Who a peer says it is: `clientInfo` and `serverInfo` in the handshake. */
export interface Implementation {
  readonly name: string
  readonly version: string
  readonly title?: string | undefined
  readonly description?: string | undefined
  readonly websiteUrl?: string | undefined
}
