/**
 * Testing kit: fault injection on the in-memory link and Schema-derived
 * arbitraries for JSON-RPC traffic. Import from `effect-mcp-transport/testing`.
 */
export * as Arbitraries from "./Arbitraries.ts"
export * as FaultInjection from "./FaultInjection.ts"
