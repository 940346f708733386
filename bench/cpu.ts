import { readdirSync, readFileSync } from 'node:fs'

/** Clock ticks per second of /proc's CPU times (Linux: 100). */
const TICKS = 100

/** User plus system CPU time of a process so far, in ms (0 when it is gone). */
function processCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command may hold spaces: the fields after it start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS
  } catch {
    return 0
  }
}

/** Every PostgreSQL server process on this machine (postmaster and backends). */
function postgresPids(): number[] {
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'postgres') pids.push(Number(entry))
    } catch {
      // gone
    }
  }
  return pids
}

/**
 * CPU time spent by a process (the server) and by PostgreSQL between `start()` and `stop()`, in ms.
 * PostgreSQL's backends come and go: a backend that exited in between is not counted (the bench's
 * connections are pooled and live through a scenario, so little is lost).
 */
export function cpuSplit(serverPid: number) {
  const server0 = processCpuMs(serverPid)
  const pg0 = new Map(postgresPids().map((pid) => [pid, processCpuMs(pid)]))
  return {
    stop(): { serverMs: number; postgresMs: number } {
      let postgresMs = 0
      for (const pid of postgresPids()) postgresMs += processCpuMs(pid) - (pg0.get(pid) ?? 0)
      return { serverMs: processCpuMs(serverPid) - server0, postgresMs }
    }
  }
}
