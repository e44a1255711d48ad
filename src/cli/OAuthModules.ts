/**
 * The OAuth client and the browser sign-in's listener, as one module the
 * commands import only when a server is signed in to (`--auth`): a plain
 * call should not load them (the listener's `node:http` alone loads Node's
 * bundled fetch).
 */
export * as Discovery from "../client/auth/Discovery.ts"
export * as FileTokenStore from "../client/auth/FileTokenStore.ts"
export * as OAuthProvider from "../client/auth/OAuthProvider.ts"
export * as TokenStore from "../client/auth/TokenStore.ts"
export * as LoopbackRedirect from "./LoopbackRedirect.ts"
