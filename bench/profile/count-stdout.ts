/** Preloaded into a server (`--import`): counts stdout writes and stdin reads, reported on stderr at exit. */
let writes = 0
let bytes = 0
let reads = 0
let readBytes = 0
const write = process.stdout.write.bind(process.stdout)
process.stdout.write = ((chunk: string | Uint8Array, ...rest: Array<any>) => {
  writes++
  bytes += chunk.length
  return write(chunk, ...rest)
}) as typeof process.stdout.write
const push = process.stdin.push.bind(process.stdin)
process.stdin.push = (chunk: any, encoding?: any) => {
  if (chunk !== null) {
    reads++
    readBytes += chunk.length
  }
  return push(chunk, encoding)
}
process.on("exit", () =>
  process.stderr.write(
    `stdout: ${writes} writes, ${(bytes / Math.max(1, writes)).toFixed(0)} bytes/write; stdin: ${reads} reads, ${(readBytes / Math.max(1, reads)).toFixed(0)} bytes/read\n`
  ))
