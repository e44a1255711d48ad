/**
 * CPU per read of a small procfs file (this process's `/proc/PID/stat`), three
 * ways: `readFileSync` decoding latin1 (Node reads a file of unknown size in
 * chunks, in JavaScript), decoding UTF-8 (one native call), and open, one
 * `readSync` into a kept buffer, close. Three rounds, 20,000 reads each.
 *
 *   npx node bench/profile/proc-read-ways.ts
 */
import { closeSync, openSync, readFileSync, readSync } from "node:fs"
const path = `/proc/${process.pid}/stat`
const buf = Buffer.allocUnsafe(4096)
const ways: Record<string, () => string> = {
  latin1: () => readFileSync(path, "latin1"),
  utf8: () => readFileSync(path, "utf8"),
  fd: () => {
    const fd = openSync(path, "r")
    try {
      const n = readSync(fd, buf, 0, buf.length, null)
      return buf.toString("latin1", 0, n)
    } finally {
      closeSync(fd)
    }
  }
}
for (let round = 0; round < 3; round++) {
  for (const [name, f] of Object.entries(ways)) {
    for (let i = 0; i < 2000; i++) f()
    const c0 = process.cpuUsage()
    const n = 20000
    for (let i = 0; i < n; i++) f()
    const c = process.cpuUsage(c0)
    console.log(name, ((c.user + c.system) / n).toFixed(2), "µs")
  }
}
