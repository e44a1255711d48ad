/**
 * Who a peer says it is: `clientInfo` and `serverInfo` in the handshake.
 *
 * @since 0.1.0
 * @category models
 */
export interface Implementation {
  readonly name: string
  readonly version: string
  readonly title?: string | undefined
  readonly description?: string | undefined
  readonly websiteUrl?: string | undefined
}
