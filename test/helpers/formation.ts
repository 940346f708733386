import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { waitFor } from './wait.js'

/**
 * A pg_auto_failover formation of the test's own (Debian's postgresql-15-auto-failover): a
 * monitor, a primary and a standby, each on a free port, all in a temporary folder; run as
 * `postgres` when the test runs as root (PostgreSQL refuses root). Everything is killed and
 * removed at teardown, also when the test fails.
 *
 * The monitor's health checks are made fast (`pgautofailover.health_check_*`,
 * `node_considered_unhealthy_timeout`, `primary_demote_timeout`: see `FAST_MONITOR`), so a lost
 * primary is replaced within a few seconds instead of pg_auto_failover's 20 to 30.
 */
export interface Formation {
  /** `postgres://postgres@127.0.0.1:P1,127.0.0.1:P2/<db>?target_session_attrs=read-write` */
  url: string
  /** The primary's port and its standby's, as the formation started. */
  ports: { primary: number; standby: number }
  /** SIGKILLs the primary node: its pg_autoctl (which would restart PostgreSQL) and its postmaster. */
  killPrimary(): void
  /** Waits until the standby answers as a primary (read-write); returns the milliseconds waited. */
  waitForPromotion(timeoutMs?: number): Promise<number>
  /** `pg_autoctl show state`, for diagnostics. */
  state(): Promise<string>
  /** How long the formation took to start, in milliseconds. */
  startMs: number
}

/** How the formation's waits ask: every 250 ms, an error (a node still starting) counting as not yet. */
const POLL = { intervalMs: 250, ignoreErrors: true }

export const FAST_MONITOR: Record<string, string> = {
  'pgautofailover.health_check_period': '1000',
  'pgautofailover.health_check_timeout': '1000',
  'pgautofailover.health_check_max_retries': '1',
  'pgautofailover.health_check_retry_delay': '500',
  'pgautofailover.node_considered_unhealthy_timeout': '3000',
  'pgautofailover.primary_demote_timeout': '3000'
}

type Teardown = { teardown(fn: () => unknown): void }

/** Why a formation cannot be made here, or undefined when it can. */
export function formationMissing(): string | undefined {
  const missing = clusterMissing()
  if (missing !== undefined) return missing
  if (findAutoctl() === undefined) return 'pg_autoctl is missing (Debian package postgresql-15-auto-failover)'
  return undefined
}

/** Why a PostgreSQL server of the test's own (`startCluster`) cannot be made here, or undefined when it can. */
export function clusterMissing(): string | undefined {
  try {
    execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' })
  } catch {
    return 'pg_config is not on PATH (no PostgreSQL binaries)'
  }
  return postgresUserMissing()
}

/** Why PostgreSQL's own programs cannot run here as the user they need, or undefined when they can. */
export function postgresUserMissing(): string | undefined {
  if (process.getuid?.() === 0) {
    try {
      execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })
    } catch {
      return 'running as root without a postgres user, and PostgreSQL refuses to run as root'
    }
  }
  return undefined
}

/**
 * How to run PostgreSQL's programs here: as `postgres` when the test runs as root (PostgreSQL
 * refuses root), with `runuser` before the command and the folders they write given to that user.
 */
export function asPostgres(): { wrap: string[]; own(path: string): void } {
  if (process.getuid?.() !== 0) return { wrap: [], own: () => {} }
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }))
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }))
  return { wrap: ['runuser', '-u', 'postgres', '--'], own: (path) => chownSync(path, uid, gid) }
}

function findAutoctl(): string | undefined {
  const bindir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim()
  for (const dir of [bindir, ...(process.env.PATH ?? '').split(':')]) {
    if (dir && existsSync(join(dir, 'pg_autoctl'))) return join(dir, 'pg_autoctl')
  }
  return undefined
}

export async function startFormation(t: Teardown, dbname = 'amis'): Promise<Formation> {
  const started = Date.now()
  const bindir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim()
  const autoctl = findAutoctl()!
  const dir = mkdtempSync(join(tmpdir(), 'amis-formation-'))
  const { wrap, own } = asPostgres()
  own(dir)
  // pg_autoctl keeps its state under XDG_CONFIG_HOME and XDG_DATA_HOME: in our folder too.
  const env = {
    PATH: `${bindir}:${process.env.PATH ?? ''}`,
    PG_CONFIG: join(bindir, 'pg_config'),
    XDG_CONFIG_HOME: join(dir, 'config'),
    XDG_DATA_HOME: join(dir, 'share'),
    HOME: dir
  }
  const command = (file: string, args: string[]) => {
    const [first, ...rest] = [...wrap, file, ...args]
    return [first!, rest] as const
  }
  const nodes: Array<{ name: string; child: ChildProcess; pgdata: string; port: number }> = []
  const killNode = (node: (typeof nodes)[number]) => {
    try {
      if (node.child.pid !== undefined) process.kill(-node.child.pid, 'SIGKILL')
    } catch {
      // gone already
    }
    const pid = postmasterPid(node.pgdata)
    if (pid !== undefined) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // gone already
      }
    }
  }
  t.teardown(async () => {
    for (const node of nodes) killNode(node)
    await sleep(200)
    // PostgreSQL's children are not in pg_autoctl's process group and leave only once they notice
    // their postmaster is gone; the monitor's logger was seen to outlive it for good. Anything still
    // running in the formation's folder goes too.
    for (const pid of processesIn(dir)) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // gone already
      }
    }
    rmSync(dir, { recursive: true, force: true })
  })
  const run = (name: string, args: string[]) => {
    const pgdata = join(dir, name)
    const [file, rest] = command(autoctl, [...args, '--pgdata', pgdata])
    // A process group of its own, so a kill reaches pg_autoctl's services and PostgreSQL together.
    const child = spawn(file, rest, { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()))
    const port = Number(args[args.indexOf('--pgport') + 1])
    nodes.push({ name, child, pgdata, port })
    return () => out
  }
  const exec = (file: string, args: string[]) =>
    new Promise<string>((resolve, reject) => {
      const [first, rest] = command(file, args)
      execFile(first, rest, { env, timeout: 10_000, encoding: 'utf8' }, (error, stdout, stderr) =>
        error ? reject(new Error(`${file} ${args.join(' ')}: ${stderr || error.message}`)) : resolve(stdout)
      )
    })
  const psql = (port: number, db: string, ...sql: string[]) =>
    exec(join(bindir, 'psql'), [
      ...['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', db, '-At'],
      ...sql.flatMap((s) => ['-c', s])
    ])

  const [p0, p1, p2] = [await freePort(), await freePort(), await freePort()]
  mkdirSync(join(dir, 'config'), { recursive: true })
  own(join(dir, 'config'))
  const monitorOut = run('monitor', [
    'create',
    'monitor',
    '--pgport',
    String(p0),
    '--hostname',
    '127.0.0.1',
    '--auth',
    'trust',
    '--no-ssl',
    '--run'
  ])
  await waitFor(
    'the monitor accepts connections',
    async () => (await psql(p0, 'pg_auto_failover', 'select 1')).trim() === '1',
    { timeoutMs: 60_000, ...POLL }
  ).catch((e: Error) => {
    throw new Error(e.message + '\n' + monitorOut())
  })
  await psql(
    p0,
    'pg_auto_failover',
    ...Object.entries(FAST_MONITOR).map(([k, v]) => `alter system set ${k} = '${v}'`),
    'select pg_reload_conf()'
  )
  const monitor = `postgres://autoctl_node@127.0.0.1:${p0}/pg_auto_failover?sslmode=disable`
  const node = (name: string, port: number) =>
    run(name, [
      'create',
      'postgres',
      '--pgport',
      String(port),
      '--hostname',
      '127.0.0.1',
      '--dbname',
      dbname,
      '--monitor',
      monitor,
      '--auth',
      'trust',
      '--no-ssl',
      '--run'
    ])
  const out1 = node('node1', p1)
  const state = () => exec(autoctl, ['show', 'state', '--pgdata', join(dir, 'monitor')])
  // The first node to register is the primary; the second is cloned from it.
  await waitFor(
    'node1 is primary',
    async () => /\|\s+(single|primary)\s+\|\s+(single|primary)\s*$/m.test(await state()),
    { timeoutMs: 60_000, ...POLL }
  ).catch((e: Error) => {
    throw new Error(e.message + '\n' + out1())
  })
  const out2 = node('node2', p2)
  // pg_basebackup waits for a spread checkpoint (minutes on an idle server): ask for one now.
  await waitFor(
    'one primary and one secondary',
    async () => {
      const s = await state()
      if (/catchingup|wait_standby/.test(s)) await psql(p1, 'postgres', 'checkpoint').catch(() => '')
      return /\|\s+primary\s+\|\s+primary\s*$/m.test(s) && /\|\s+secondary\s+\|\s+secondary\s*$/m.test(s)
    },
    { timeoutMs: 120_000, ...POLL }
  ).catch(async (e: Error) => {
    throw new Error(e.message + '\n' + (await state().catch(() => '')) + '\n' + out2())
  })
  const startMs = Date.now() - started
  return {
    url: `postgres://postgres@127.0.0.1:${p1},127.0.0.1:${p2}/${dbname}?target_session_attrs=read-write`,
    ports: { primary: p1, standby: p2 },
    startMs,
    killPrimary: () => killNode(nodes.find((n) => n.port === p1)!),
    async waitForPromotion(timeoutMs = 60_000) {
      const from = Date.now()
      await waitFor(
        'the standby is promoted',
        async () => (await psql(p2, 'postgres', 'select pg_is_in_recovery()')).trim() === 'f',
        { timeoutMs, ...POLL }
      ).catch(async (e: Error) => {
        throw new Error(e.message + '\n' + (await state().catch(() => '')))
      })
      return Date.now() - from
    },
    state
  }
}

/** Processes whose working directory is in `dir` (PostgreSQL's run in their data folder), from /proc. */
function processesIn(dir: string): number[] {
  let pids: string[]
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name))
  } catch {
    return []
  }
  return pids.flatMap((pid) => {
    try {
      return readlinkSync(`/proc/${pid}/cwd`).startsWith(dir + '/') ? [Number(pid)] : []
    } catch {
      return []
    }
  })
}

/**
 * A PostgreSQL server of the test's own, in a temporary folder, on a free port with fsync off.
 * The machine's shared server is used by the other test files at the same time: a test that
 * stops its server, or needs a replica to keep up with its writes alone, runs on one of these.
 * Stopped (immediately) and removed at teardown, also when the test fails.
 */
export interface Cluster {
  port: number
  /** `postgres://postgres@127.0.0.1:<port>/<database>` */
  url(database?: string): string
  /** `psql -At -c statement` on `database`: its output. */
  sql(statement: string, database?: string): Promise<string>
  /** `pg_ctl stop`: `fast` ends the sessions politely, `immediate` without a word to them. */
  stop(mode?: 'fast' | 'immediate'): Promise<void>
  /** Starts it again on the same port after `stop`. */
  start(): Promise<void>
}

/**
 * Starts a new cluster (initdb), or with `standbyOf` a hot standby of another one: a base backup
 * of it, streaming its WAL (`pg_basebackup -R`).
 */
export async function startCluster(t: Teardown, options: { standbyOf?: Cluster } = {}): Promise<Cluster> {
  const bindir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim()
  const { wrap, own } = asPostgres()
  const dir = mkdtempSync(join(tmpdir(), 'amis-pg-'))
  own(dir)
  const pgdata = join(dir, 'data')
  const port = await freePort()
  const run = (program: string, args: string[], timeout = 60_000) =>
    new Promise<string>((resolve, reject) => {
      const [file, ...rest] = [...wrap, join(bindir, program), ...args]
      execFile(file!, rest, { timeout, encoding: 'utf8', cwd: dir }, (error, stdout, stderr) =>
        error ? reject(new Error(`${program} ${args.join(' ')}: ${stderr || error.message}`)) : resolve(stdout)
      )
    })
  const ctl = (...args: string[]) => run('pg_ctl', ['-D', pgdata, '-w', '-t', '60', '-l', join(dir, 'log'), ...args])
  t.teardown(async () => {
    // pg_ctl's immediate stop ends the postmaster's children with it (a SIGKILLed postmaster leaves
    // them to notice by themselves); SIGKILL only when pg_ctl cannot.
    if (postmasterPid(pgdata) !== undefined) await ctl('-m', 'immediate', 'stop').catch(() => '')
    const pid = postmasterPid(pgdata)
    if (pid !== undefined) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // gone already
      }
      await sleep(200)
    }
    rmSync(dir, { recursive: true, force: true })
  })
  if (options.standbyOf) {
    // -R writes standby.signal and primary_conninfo; -c fast asks for the checkpoint now.
    await run('pg_basebackup', [
      ...['-h', '127.0.0.1', '-p', String(options.standbyOf.port), '-U', 'postgres'],
      ...['-D', pgdata, '-R', '-X', 'stream', '-c', 'fast']
    ])
  } else {
    await run('initdb', ['-D', pgdata, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale', 'C'])
  }
  // The socket in our folder, TCP on the free port; the rest as initdb (or the primary) left it.
  const start = async () => {
    await ctl('-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`, 'start').catch((e: Error) => {
      let log = ''
      try {
        log = readFileSync(join(dir, 'log'), 'utf8')
      } catch {
        // no log written
      }
      throw new Error(`${e.message}\n${log}`)
    })
  }
  await start()
  const url = (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`
  return {
    port,
    url,
    sql: (statement, database = 'postgres') =>
      run(
        'psql',
        ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', database, '-At', '-c', statement],
        10_000
      ),
    async stop(mode = 'fast') {
      await ctl('-m', mode, 'stop')
    },
    start
  }
}

export function postmasterPid(pgdata: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(pgdata, 'postmaster.pid'), 'utf8').split('\n')[0])
    return Number.isInteger(pid) && pid > 0 ? pid : undefined
  } catch {
    return undefined
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo
      server.close(() => resolve(port))
    })
  })
}
