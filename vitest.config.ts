import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Real child processes and loopback servers: keep the 2-core machines from oversubscribing.
    maxWorkers: 2
  }
})
