/**
 * Where the bench clients load this project's modules from: `src/` by
 * default (TypeScript, stripped by Node as it loads), or with
 * `BENCH_BUILD=dist` the built JavaScript the package ships, which is what a
 * user's process loads. Cold start measures the latter: the peers are loaded
 * as the JavaScript they publish, and type stripping is not a cost users pay.
 */
type McpClientModule = typeof import("../../src/client/McpClient.ts")
type ClientTransportModule = typeof import("../../src/client/ClientTransport.ts")
type StdioClientTransportModule = typeof import("../../src/client/StdioClientTransport.ts")

const fromDist = process.env.BENCH_BUILD === "dist"
const root = new URL(fromDist ? "../../dist/" : "../../src/", import.meta.url)
// A computed specifier: `dist/` need not exist when the bench is type-checked.
const load = <M>(module: string): Promise<M> => import(new URL(`${module}${fromDist ? ".js" : ".ts"}`, root).href)

export const loadMcpClient = () => load<McpClientModule>("client/McpClient")
export const loadClientTransport = () => load<ClientTransportModule>("client/ClientTransport")
export const loadStdioClientTransport = () => load<StdioClientTransportModule>("client/StdioClientTransport")
