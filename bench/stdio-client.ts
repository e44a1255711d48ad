/**
 * The stdio client benchmark on its own: `bench/main.ts` with
 * BENCH_WORKLOADS=stdio-client unless another selection is given. Kept so
 * that older commands keep working; `npm run bench` runs every workload.
 */
process.env.BENCH_WORKLOADS ??= "stdio-client"
await import("./main.ts")
