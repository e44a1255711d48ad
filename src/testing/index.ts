/**
 * Testing kit: fault injection on the in-memory link and Schema-derived
 * arbitraries for JSON-RPC traffic. Import from `effect-mcp-transport/testing`.
 */
/**
 * Arbitraries for JSON-RPC traffic, derived from the Schemas in `JsonRpc` (`effect/Arbitrary`, no fast-check).
 *
 * @since 0.1.0
 * @category modules
 */
export * as Arbitraries from "./Arbitraries.ts"
/**
 * A controllable fault plan for the in-memory link.
 *
 * @since 0.1.0
 * @category modules
 */
export * as FaultInjection from "./FaultInjection.ts"
