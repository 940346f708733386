import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir, totalmem } from 'node:os'
import { join } from 'node:path'
import { asPostgres, freePort, postgresUserMissing } from '../test/helpers/formation.js'

/**
 * A PostgreSQL server of the bench's own, in a temporary folder, set as docs/scaling.md advises
 * operators for a large migration: `shared_buffers` a quarter of the machine's memory and
 * `max_wal_size` 16 GB. Autovacuum is off, so that no statistics are gathered as the tables grow
 * (the worst case for the plans). Everything else is PostgreSQL's default (fsync on).
 */
export interface OwnPostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  url: string
  /** The settings it was started with, for the report. */
  settings: Record<string, string>
  stop(): void
}

export async function startOwnPostgres(extra: Record<string, string> = {}): Promise<OwnPostgres> {
  const missing = postgresUserMissing()
  if (missing) throw new Error(`no PostgreSQL server of the bench's own: ${missing}`)
  const bindir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim()
  const { wrap, own } = asPostgres()
  const dir = mkdtempSync(join(tmpdir(), 'amis-bench-pg-'))
  own(dir)
  const run = (command: string, ...args: string[]) => {
    const [file, ...rest] = [...wrap, join(bindir, command), ...args]
    execFileSync(file!, rest, { stdio: 'pipe', timeout: 120_000 })
  }
  const data = join(dir, 'data')
  const port = await freePort()
  const settings: Record<string, string> = {
    shared_buffers: `${Math.floor(totalmem() / 4 / 1024 / 1024)}MB`,
    max_wal_size: '16GB',
    autovacuum: 'off',
    ...extra
  }
  run('initdb', '-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale', 'C')
  const options = [
    `-p ${port}`,
    `-k ${dir}`,
    '-c listen_addresses=127.0.0.1',
    ...Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`)
  ].join(' ')
  run('pg_ctl', '-D', data, '-w', '-t', '60', '-l', join(dir, 'log'), '-o', options, 'start')
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    settings,
    stop() {
      try {
        run('pg_ctl', '-D', data, '-w', '-t', '60', '-m', 'fast', 'stop')
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    }
  }
}
