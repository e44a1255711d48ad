/**
 * A server that does not ask for Redis does not load it: the HTTP server
 * transport and McpServer (with the Bus they read) load neither the Redis
 * modules of the package nor node-redis; RedisFleet loads both.
 */
import { describe, expect, it } from "vitest"
import { loadedBy } from "../../fixtures/loadedBy.ts"

const redisModules = (urls: ReadonlyArray<string>) =>
  urls.filter((url) => /\/src\/server\/Redis[A-Za-z]*\.ts$|\/node_modules\/(@redis|redis)\/|NodeRedis|\/persistence\/Redis/.test(url))

describe("Redis is loaded on demand", () => {
  it("McpServer and the HTTP server transport load no Redis module; RedisFleet does", () => {
    const plain = loadedBy("./src/server/McpServer.ts", "./src/server/HttpServerTransport.ts", "./src/server/Bus.ts")
    expect(plain.some((url) => url.endsWith("/src/server/Bus.ts"))).toBe(true)
    expect(redisModules(plain)).toEqual([])
    const fleet = loadedBy("./src/server/RedisFleet.ts")
    expect(fleet.some((url) => url.endsWith("/src/server/RedisEventStore.ts"))).toBe(true)
    expect(fleet.some((url) => /\/node_modules\/(@redis\/client|redis)\//.test(url))).toBe(true)
  }, 60_000)
})
