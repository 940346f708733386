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

/**
 * The machine's CPU time so far, every core, in ms: busy (user, nice, system, irq, softirq) and
 * stolen (a virtual machine's cores given to other machines by the hypervisor).
 */
function machineCpuMs(): { busy: number; steal: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number)
  const [user, nice, system, , , irq, softirq, steal] = fields
  return { busy: ((user! + nice! + system! + irq! + softirq!) * 1000) / TICKS, steal: ((steal ?? 0) * 1000) / TICKS }
}

/** This process's CPU time so far with that of its children waited for (the migration client), in ms. */
function selfWithChildrenMs(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return ((Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 1000) / TICKS
}

/** CPU time so far of every process on the machine but those given, by pid, with its name. */
function processesCpu(except: (pid: number, name: string) => boolean): Map<number, { name: string; ms: number }> {
  const all = new Map<number, { name: string; ms: number }>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const pid = Number(entry)
    try {
      // Kernel threads per core ("kworker/1:2") are grouped under their name before the slash.
      const name = readFileSync(`/proc/${entry}/comm`, 'utf8').trim().replace(/\/.*$/, '')
      if (!except(pid, name)) all.set(pid, { name, ms: processCpuMs(pid) })
    } catch {
      // gone
    }
  }
  return all
}

/**
 * The machine's CPU that went to none of the run's processes between `start` and `stop`: the
 * busy time of /proc/stat (steal apart) less the server's, every PostgreSQL process's and the bench's own
 * with its children (the migration client), as a share of one core; and the processes outside
 * the run that used the most (a kernel thread such as DAMON's `kdamond` shows there). Processes
 * that ended in between are in the share but not in the list.
 */
export interface OutsideCpu {
  /** The machine's busy CPU, in cores (2: both cores busy all the time). */
  busyCores: number
  /** CPU the hypervisor gave to other machines while this one wanted it, in % of one core. */
  stealPercent: number
  /** CPU outside the run, in % of one core. */
  outsidePercent: number
  /** The three names outside the run with the most CPU, in % of one core. */
  top: Array<{ name: string; percent: number }>
}

export function outsideCpu(serverPid: number): { stop(): OutsideCpu } {
  const ours = (pid: number, name: string) => pid === serverPid || pid === process.pid || name === 'postgres'
  const oursNow = () => new Map([serverPid, ...postgresPids()].map((pid) => [pid, processCpuMs(pid)]))
  const t0 = performance.now()
  const cpu0 = machineCpuMs()
  const self0 = selfWithChildrenMs()
  const ours0 = oursNow()
  const others0 = processesCpu(ours)
  return {
    stop() {
      const wallMs = performance.now() - t0
      const cpu = machineCpuMs()
      const busyMs = cpu.busy - cpu0.busy
      let oursMs = selfWithChildrenMs() - self0
      for (const [pid, ms] of oursNow()) oursMs += ms - (ours0.get(pid) ?? 0)
      // PostgreSQL's backends that ended in between are missing from `ours`: at most they raise the share.
      const outsideMs = Math.max(0, busyMs - oursMs)
      const byName = new Map<string, number>()
      for (const [pid, now] of processesCpu(ours)) {
        const used = now.ms - (others0.get(pid)?.ms ?? 0)
        if (used > 0) byName.set(now.name, (byName.get(now.name) ?? 0) + used)
      }
      const percent = (ms: number) => Math.round((ms / wallMs) * 1000) / 10
      return {
        busyCores: Math.round((busyMs / wallMs) * 100) / 100,
        stealPercent: percent(cpu.steal - cpu0.steal),
        outsidePercent: percent(outsideMs),
        top: [...byName]
          .sort((a, b) => b[1] - a[1])
          .slice(0, 3)
          .map(([name, ms]) => ({ name, percent: percent(ms) }))
      }
    }
  }
}
