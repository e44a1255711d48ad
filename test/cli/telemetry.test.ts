/**
 * When the command line exports telemetry: decided from the subcommand and
 * the environment before anything of the exporter is loaded (program.ts
 * imports Telemetry only then).
 */
import { describe, expect, it } from "vitest"
import * as TelemetryFlag from "../../src/cli/TelemetryFlag.ts"

describe("CLI telemetry", () => {
  it("serve, bridge, call and inspect export when OTEL_EXPORTER_OTLP_ENDPOINT is set, nothing else does", () => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" }
    for (const command of ["serve", "bridge", "call", "inspect"]) {
      expect(TelemetryFlag.wanted(command, env)).toBe(true)
      expect(TelemetryFlag.wanted(command, {})).toBe(false)
      expect(TelemetryFlag.wanted(command, { OTEL_EXPORTER_OTLP_ENDPOINT: " " })).toBe(false)
    }
    expect(TelemetryFlag.wanted("lint", env)).toBe(false)
    expect(TelemetryFlag.wanted(undefined, env)).toBe(false)
  })
})
