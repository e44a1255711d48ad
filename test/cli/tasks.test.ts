/**
 * The CLI and tasks (the `io.modelcontextprotocol/tasks` extension), against
 * the official SDK v2 server running tools as tasks
 * (test/fixtures/peers/sdk2-task-server.ts): `call` shows the task's id and
 * status on stderr and prints the result, Ctrl-C during `call` sends
 * `tasks/cancel` for the task, and `task get` / `task cancel` work on a task
 * by its id. The fixture's events file shows what reached it.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { NODE, readEvents, runCli, startCli } from "./runCli.ts"
import { tempFiles } from "../fixtures/temp-files.ts"

const tempFile = tempFiles("effect-mcp-cli-")

const FIXTURE = path.resolve(import.meta.dirname, "../fixtures/peers/sdk2-task-server.ts")
const TIMEOUT = 120_000

const events = tempFile("task-events.jsonl")
let server: ChildProcess | undefined
let url = ""

beforeAll(async () => {
  server = spawn(NODE, [FIXTURE, "--http", "--events", events], { stdio: ["ignore", "pipe", "inherit"], detached: true })
  url = await new Promise<string>((resolve, reject) => {
    let out = ""
    server!.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk
      const m = /LISTENING (\d+)/.exec(out)
      if (m !== null) resolve(`http://127.0.0.1:${m[1]}/mcp`)
    })
    server!.on("exit", (code) => reject(new Error(`the task server exited ${code}`)))
  })
}, TIMEOUT)

afterAll(() => {
  if (server?.pid !== undefined && server.exitCode === null) process.kill(-server.pid, "SIGKILL")
})

const taskIdIn = (stderr: string): string => /task: ([0-9a-f-]+)/.exec(stderr)![1]!

describe.concurrent("tasks in the CLI", () => {
  it("call follows the task: its id and statuses on stderr, the result on stdout", async () => {
    const r = await runCli(["call", url, "report", "polls=2", "pollMs=20"])
    expect(r.code).toBe(0)
    expect(r.stdout.trim()).toBe("report ready")
    const id = taskIdIn(r.stderr)
    expect(r.stderr).toContain(`task: ${id}\ntask working\ntask working: poll 1 of 2\ntask completed: done\n`)
  }, TIMEOUT)

  it("a failed task exits 4 with its error", async () => {
    const r = await runCli(["call", url, "broken"])
    expect(r.code).toBe(4)
    expect(r.stderr).toContain("rate limit exceeded")
  }, TIMEOUT)

  it("Ctrl-C during call cancels the task; task get then shows it cancelled", async () => {
    const cli = startCli(["call", url, "endless", "pollMs=20"])
    await cli.waitFor("task working")
    const id = taskIdIn(cli.stderr())
    cli.child.kill("SIGINT")
    const r = await cli.exit
    expect(r.code).toBe(130)
    expect(readEvents(events).filter((e) => e.method === "tasks/cancel" && e.wire === undefined).map((e) => e.taskId)).toContain(id)
    const got = await runCli(["task", "get", url, id])
    expect(got.code).toBe(0)
    expect(got.stdout.trim()).toBe(`${id}: cancelled: cancelled by the client`)
    const json = await runCli(["task", "get", "--json", url, id])
    expect(JSON.parse(json.stdout)).toMatchObject({ taskId: id, status: "cancelled" })
  }, TIMEOUT)

  it("Ctrl-C during call cancels the task of a stdio server", async () => {
    const stdioEvents = tempFile("task-events-stdio.jsonl")
    const cli = startCli(["call", "endless", "pollMs=20", "--", NODE, FIXTURE, "--stdio", "--events", stdioEvents])
    await cli.waitFor("task working")
    const id = taskIdIn(cli.stderr())
    cli.child.kill("SIGINT")
    const r = await cli.exit
    expect(r.code).toBe(130)
    expect(readEvents(stdioEvents).filter((e) => e.method === "tasks/cancel").map((e) => e.taskId)).toEqual([id])
  }, TIMEOUT)

  it("task cancel asks the server to cancel a task by its id", async () => {
    // A task left running: its call is killed outright, so nothing cancels it.
    const cli = startCli(["call", url, "endless", "pollMs=20"])
    await cli.waitFor("task working")
    const id = taskIdIn(cli.stderr())
    cli.child.kill("SIGKILL")
    await cli.exit
    expect((await runCli(["task", "get", url, id])).stdout.trim()).toBe(`${id}: working`)
    const cancelled = await runCli(["task", "cancel", url, id])
    expect(cancelled.code).toBe(0)
    expect(cancelled.stdout.trim()).toBe(`cancel requested for task ${id}`)
    expect((await runCli(["task", "get", url, id])).stdout.trim()).toBe(`${id}: cancelled: cancelled by the client`)
  }, TIMEOUT)

  it("task get of an unknown task exits 4 with the server's error", async () => {
    const r = await runCli(["task", "get", url, "no-such-task"])
    expect(r.code).toBe(4)
    expect(r.stderr).toContain("Task not found")
  }, TIMEOUT)
})
