import { readdirSync, readFileSync } from 'node:fs'
import { createHash } from 'node:crypto'

/** Clock ticks per second of /proc's CPU times (Linux: 100). */
const TICKS = 100

/** User plus system CPU time of a process so far, in ms (0 when it is gone). */
export function processCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command may hold spaces: the fields after it start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS
  } catch {
    return 0
  }
}

/**
 * The PostgreSQL server processes that work for `database`: its backends and the server's shared
 * ones (postmaster, checkpointer, WAL writer, autovacuum…). Backends of other databases are left
 * out, so that other work on the same server (a test suite, say) is not counted as ours. Without
 * a database, every PostgreSQL process.
 */
function postgresPids(database?: string): number[] {
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'postgres') continue
      // A backend's title: "postgres: <cluster>: <user> <database> <client> <activity>".
      const title = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ')
      const backend = / \S+ (\S+) (?:\d[\d.:]*\(\d+\)|\[local\]) /.exec(title)
      if (database === undefined || !backend || backend[1] === database) pids.push(Number(entry))
    } catch {
      // gone
    }
  }
  return pids
}

/**
 * CPU time spent by a process (the server) and by PostgreSQL for `database` between `start()` and
 * `stop()`, in ms.
 * PostgreSQL's backends come and go: a backend that exited in between is not counted (the bench's
 * connections are pooled and live through a scenario, so little is lost).
 */
export function cpuSplit(serverPid: number, database?: string) {
  const server0 = processCpuMs(serverPid)
  const pg0 = new Map(postgresPids(database).map((pid) => [pid, processCpuMs(pid)]))
  return {
    stop(): { serverMs: number; postgresMs: number } {
      let postgresMs = 0
      for (const pid of postgresPids(database)) postgresMs += processCpuMs(pid) - (pg0.get(pid) ?? 0)
      return { serverMs: processCpuMs(serverPid) - server0, postgresMs }
    }
  }
}

/**
 * The same fixed work done again and again while a slice of a run migrates, to tell a machine that
 * slows down from work that grows: CPU ms of this process parsing, sorting and hashing the same
 * data, and CPU ms of PostgreSQL's backend (of the connection `query` uses, asked each time: a pool
 * replaces its connections now and then) hashing and
 * counting the same rows. Each is the mean over the tries of the slice, taken every `everyMs`
 * while it runs, under the same load as the migration (a try costs about 0.2 s of CPU).
 */
export interface MachineReference {
  jsMs: number
  postgresMs: number
  tries: number
}

export function machineSampler(
  query: (text: string) => Promise<Array<Record<string, unknown>>>,
  everyMs = 10_000
): { stop(): Promise<MachineReference> } {
  let js = 0
  let pg = 0
  let tries = 0
  let running: Promise<void> = Promise.resolve()
  const once = async () => {
    const c0 = process.cpuUsage()
    fixedJavaScriptWork()
    const c = process.cpuUsage(c0)
    const backendPid = Number((await query('select pg_backend_pid() as pid'))[0]?.pid)
    const pg0 = processCpuMs(backendPid)
    await query('select count(distinct md5(g::text)) from generate_series(1, 100000) g')
    js += (c.user + c.system) / 1000
    pg += processCpuMs(backendPid) - pg0
    tries++
  }
  const timer = setInterval(() => {
    running = running.then(once)
  }, everyMs)
  running = running.then(once)
  return {
    async stop() {
      clearInterval(timer)
      await running
      return { jsMs: Math.round(js / tries), postgresMs: Math.round(pg / tries), tries }
    }
  }
}

function fixedJavaScriptWork(): number {
  const rows = Array.from({ length: 50_000 }, (_, i) => ({
    external: `EXT-${String((i * 7919) % 50_000).padStart(6, '0')}`,
    amount: ((i * 31) % 10_000) / 100,
    lines: [i % 7, i % 11, i % 13]
  }))
  let sum = 0
  for (let round = 0; round < 1; round++) {
    const parsed = JSON.parse(JSON.stringify(rows)) as typeof rows
    parsed.sort((a, b) => (a.external < b.external ? -1 : a.external > b.external ? 1 : 0))
    for (const r of parsed) sum += createHash('sha256').update(r.external).digest()[0]! + r.amount
  }
  return sum
}
