/**
 * The `--port` / `--host` pair of every command that listens over HTTP
 * (`serve --http`, `bridge --http`), so both accept and describe them alike.
 */
import { Flag } from "effect/cli"

export const DEFAULT_PORT = 8421
export const DEFAULT_HOST = "127.0.0.1"

export const port = Flag.Int("port").pipe(
  Flag.withDescription(`Port for --http; 0 picks a free one. Default ${DEFAULT_PORT}`),
  Flag.filter((n) => n >= 0 && n <= 65535, (n) => `expected a port between 0 and 65535, got ${n}`),
  Flag.optional
)

export const host = Flag.String("host").pipe(
  Flag.withDescription(`Interface for --http. Default ${DEFAULT_HOST}`),
  Flag.optional
)
