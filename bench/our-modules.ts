/**
 * Where bench processes load this project's modules from: `src/` by default
 * (TypeScript, stripped by Node as it loads), or with `BENCH_BUILD=dist` the
 * built JavaScript the package ships, which is what a user's process loads.
 * `npm run bench` sets the latter for every process it starts: the peers are
 * loaded as the JavaScript they publish, and type stripping (its time and the
 * source text it keeps in memory) is not a cost users pay.
 */
const fromDist = process.env.BENCH_BUILD === "dist"
const root = new URL(fromDist ? "../dist/" : "../src/", import.meta.url)

/** `module` is a path under `src/` without its extension, e.g. `server/McpServer`. */
// A computed specifier: `dist/` need not exist when the bench is type-checked.
const load = <M>(module: string): Promise<M> => import(new URL(`${module}${fromDist ? ".js" : ".ts"}`, root).href)

export const loadMcpClient = () => load<typeof import("../src/client/McpClient.ts")>("client/McpClient")
export const loadClientTransport = () => load<typeof import("../src/client/ClientTransport.ts")>("client/ClientTransport")
export const loadStdioClientTransport = () =>
  load<typeof import("../src/client/StdioClientTransport.ts")>("client/StdioClientTransport")
export const loadNodeSpawner = () => load<typeof import("../src/client/NodeSpawner.ts")>("client/NodeSpawner")
export const loadStreamableHttpClientTransport = () =>
  load<typeof import("../src/client/StreamableHttpClientTransport.ts")>("client/StreamableHttpClientTransport")
export const loadMcpServer = () => load<typeof import("../src/server/McpServer.ts")>("server/McpServer")
export const loadStdioServerTransport = () =>
  load<typeof import("../src/server/StdioServerTransport.ts")>("server/StdioServerTransport")
export const loadHttpServerTransport = () =>
  load<typeof import("../src/server/HttpServerTransport.ts")>("server/HttpServerTransport")
export const loadJsonRpc = () => load<typeof import("../src/JsonRpc.ts")>("JsonRpc")
export const loadBridge = () => load<typeof import("../src/bridge/Bridge.ts")>("bridge/Bridge")
export const loadRedisFleet = () => load<typeof import("../src/server/RedisFleet.ts")>("server/RedisFleet")

export const loadOneShot = () => load<typeof import("../src/client/OneShot.ts")>("client/OneShot")
export const loadTool = () => load<typeof import("../src/server/Tool.ts")>("server/Tool")
export const loadMetrics = () => load<typeof import("../src/observability/Metrics.ts")>("observability/Metrics")
