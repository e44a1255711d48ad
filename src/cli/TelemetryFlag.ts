/**
 * Whether the command line exports telemetry: the subcommands that serve or
 * call a server (`serve`, `bridge`, `call`, `inspect`) do when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` names a collector. Decided before anything
 * of the exporter is loaded.
 */
const EXPORTING = new Set(["serve", "bridge", "call", "inspect"])

export const wanted = (subcommand: string | undefined, env: Readonly<Record<string, string | undefined>>): boolean =>
  subcommand !== undefined && EXPORTING.has(subcommand) && (env.OTEL_EXPORTER_OTLP_ENDPOINT ?? "").trim() !== ""
