import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { runMigrateCli, type MigrateCliIO } from '../../src/cli/migrate/index.js'
import { generateAccounts, type GenerateOptions } from '../../src/cli/migrate/generate.js'
import type { ReportEntry } from '../../src/cli/migrate/report.js'
import { importSetup, TEAM } from './accounts.js'

type Setup = Parameters<typeof importSetup>

/** `importSetup` (tenant ACME_ENERGY, team Migrations) with the app listening on a loopback port. */
export async function migrationServer(t: Setup[0], options: Setup[1] = {}) {
  const setup = await importSetup(t, options)
  const url = await setup.app.listen({ port: 0, host: '127.0.0.1' })
  return { ...setup, url }
}

/** Generator options for tests: the accounts of ACME_ENERGY made for today. */
export function generated(count: number, seed: string, changes: Partial<GenerateOptions> = {}) {
  return [
    ...generateAccounts({
      count,
      seed,
      invalidShare: 0,
      postImportShare: 1,
      supplier: 'ACME_ENERGY',
      today: new Date().toISOString().slice(0, 10),
      ...changes
    })
  ]
}

/** Writes lines (objects as JSON, strings as they are) to `name` in the test's own folder. */
export function inputFile(dir: string, name: string, lines: Array<string | object>): string {
  const path = join(dir, name)
  writeFileSync(path, lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n')
  return path
}

export interface ClientRun {
  code: number
  stdout: string
  stderr: string
}

/** The migration client in this process (real fetch, real server), in the background: its output as it comes, and its end. */
export function clientInBackground(argv: string[], env: Record<string, string>, io: Partial<MigrateCliIO> = {}) {
  const run: ClientRun = { code: -1, stdout: '', stderr: '' }
  const done = runMigrateCli(argv, {
    env,
    stdout: (s) => {
      run.stdout += s
    },
    stderr: (s) => {
      run.stderr += s
    },
    progressIntervalMs: 200,
    ...io
  }).then((code) => {
    run.code = code
    return run
  })
  return { run, done }
}

/** Runs the migration client in this process (real fetch, real server) and records its output. */
export function runClient(
  argv: string[],
  env: Record<string, string>,
  io: Partial<MigrateCliIO> = {}
): Promise<ClientRun> {
  return clientInBackground(argv, env, io).done
}

/**
 * The common options of a run against `url` with `report` as the report file, account by account
 * (`--batch-size 1`, the single endpoints) unless `more` gives another batch size (the last wins).
 */
export const clientArgs = (file: string, url: string, report: string, ...more: string[]) => [
  file,
  '--url',
  url,
  '--team',
  TEAM,
  '--report',
  report,
  '--batch-size',
  '1',
  ...more
]

export function readReport(path: string): ReportEntry[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as ReportEntry)
}
