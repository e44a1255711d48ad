/**
 * `serve --http --metrics` scraped by a real Prometheus (Debian's
 * `prometheus` binary, a child process with a config and a data directory of
 * its own on a free loopback port, scraping every second): after some calls,
 * Prometheus's query API answers for the server's operation duration
 * histogram. Without the binary the test is skipped, except under `CI=true`,
 * where a missing binary fails it.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { describe, expect, it } from "@effect/vitest"
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, Schedule } from "effect"
import * as McpClient from "../../src/client/McpClient.ts"
import * as StreamableHttpClientTransport from "../../src/client/StreamableHttpClientTransport.ts"
import { runCli, startCli } from "./runCli.ts"

const PROMETHEUS = "prometheus"
const found = spawnSync(PROMETHEUS, ["--version"], { stdio: "ignore" }).status === 0
if (!found && process.env.CI === "true") {
  throw new Error("CI=true and no `prometheus` binary on the PATH: install Debian's prometheus package")
}
if (!found) console.warn("test/cli/metrics.test.ts: no `prometheus` binary on the PATH; the scrape test is skipped")

/** A loopback port free a moment ago. */
const freePort = () =>
  Effect.callback<number>((resume) => {
    const server = net.createServer()
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port
      server.close(() => resume(Effect.succeed(port)))
    })
  })

/** Prometheus scraping `target` every second, stopped (by pid) and its directory removed with the scope. */
const startPrometheus = (target: string) =>
  Effect.gen(function*() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-mcp-prometheus-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
    const config = path.join(dir, "prometheus.yml")
    fs.writeFileSync(
      config,
      [
        "global:",
        "  scrape_interval: 1s",
        "  evaluation_interval: 1s",
        "scrape_configs:",
        "  - job_name: mcp",
        "    scrape_interval: 1s",
        "    scrape_timeout: 1s",
        "    static_configs:",
        `      - targets: ["${target}"]`,
        ""
      ].join("\n")
    )
    const port = yield* freePort()
    const child = spawn(PROMETHEUS, [
      `--config.file=${config}`,
      `--storage.tsdb.path=${path.join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`
    ], { stdio: ["ignore", "ignore", "pipe"] })
    let log = ""
    child.stderr!.setEncoding("utf8").on("data", (d: string) => void (log += d))
    const exited = new Promise<void>((resolve) => child.on("close", () => resolve()))
    yield* Effect.addFinalizer(() =>
      Effect.promise(() => {
        if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, "SIGTERM")
        return exited
      })
    )
    return { api: `http://127.0.0.1:${port}`, log: () => log }
  })

/** The query's vector, once the API answers it with at least one sample. */
const query = (api: string, promql: string) =>
  Effect.tryPromise(async () => {
    const response = await fetch(`${api}/api/v1/query?query=${encodeURIComponent(promql)}`)
    const body = await response.json() as {
      status: string
      data?: { result: Array<{ metric: Record<string, string>; value: [number, string] }> }
    }
    if (body.status !== "success" || body.data === undefined || body.data.result.length === 0) {
      throw new Error(`no answer yet: ${JSON.stringify(body)}`)
    }
    return body.data.result
  })

describe("serve --metrics", () => {
  it.live("needs --http: one line on stderr, exit 2", () =>
    Effect.gen(function*() {
      const result = yield* Effect.promise(() => runCli(["serve", "--metrics"]))
      expect(result.code).toBe(2)
      expect(result.stderr.trim()).toBe("effect-mcp-transport: --metrics needs --http")
    }))
})

describe.skipIf(!found)("serve --http --metrics scraped by Prometheus", { timeout: 180_000 }, () => {
  it.live("Prometheus's query API answers for mcp.server.operation.duration after some calls", () =>
    Effect.gen(function*() {
      const server = startCli(["serve", "--http", "--port", "0", "--metrics"])
      yield* Effect.addFinalizer(() =>
        Effect.promise(() => {
          if (server.child.exitCode === null && server.child.signalCode === null) process.kill(server.child.pid!, "SIGTERM")
          return server.exit
        })
      )
      yield* Effect.promise(() => server.waitFor(/listening http:\/\/127\.0\.0\.1:\d+\/mcp/))
      const url = /listening (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(server.stderr())![1]!
      const target = new URL(url).host

      const client = yield* McpClient.connect(StreamableHttpClientTransport.make({ url }), { protocol: "2025-11-25" })
      for (const text of ["one", "two", "three"]) {
        yield* client.callTool({ name: "echo", arguments: { text } })
      }

      const prometheus = yield* startPrometheus(target)
      // Prometheus starts, then scrapes every second: asked again until a scrape has landed.
      const result = yield* query(
        prometheus.api,
        `mcp_server_operation_duration_count{mcp_method_name="tools/call",gen_ai_tool_name="echo"}`
      ).pipe(
        Effect.retry({ schedule: Schedule.spaced("500 millis"), times: 240 }),
        Effect.mapError((e) => new Error(`${e}\nprometheus said:\n${prometheus.log()}`))
      )
      expect(result).toHaveLength(1)
      expect(result[0]!.metric).toMatchObject({
        job: "mcp",
        mcp_protocol_version: "2025-11-25",
        network_transport: "tcp",
        gen_ai_operation_name: "execute_tool"
      })
      expect(Number(result[0]!.value[1])).toBe(3)
      const buckets = yield* query(prometheus.api, `mcp_server_operation_duration_bucket{mcp_method_name="tools/call",le="+Inf"}`)
      expect(Number(buckets[0]!.value[1])).toBe(3)
    }).pipe(Effect.scoped, Effect.provide(NodeHttpClient.layerUndici)))
})
