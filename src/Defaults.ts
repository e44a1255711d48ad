/**
 * The defaults both sides share: how long a request may wait for its answer
 * and how large one message may be. Client transports, server transports and
 * the CLI read them from here so a limit is stated once.
 *
 * @since 0.1.0
 */

/**
 * How long a request waits for its response unless the caller says otherwise: 30 seconds.
 *
 * @since 0.1.0
 * @category defaults
 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000

/**
 * The largest message (one NDJSON line, one SSE event, one JSON body) accepted by default: 10 MiB.
 *
 * @since 0.1.0
 * @category defaults
 */
export const DEFAULT_MAX_MESSAGE_BYTES = 10 * 1024 * 1024
