import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import iconv from 'iconv-lite'
import { csvRow, SAMPLE_EXTRACT, STARTER_MAPPING } from '../src/cli/migrate/map/starter.js'
import { projectRoot } from '../src/paths.js'
import { rssMb } from './processes.js'

/**
 * The mapping row: BENCH_MAP_ACCOUNTS accounts (default 1,000,000) with ten transactions each, an
 * extract in the documented layout written as an old system does (Windows-1252, CRLF, £ amounts,
 * DD/MM/YYYY), about 16 source rows per account, mapped to lines by the starter mapping in a
 * process of its own (`npm run migrate -- map`, compiled when dist/ is built): accounts/s from
 * start to exit, and that process's peak RSS (sampled every 100 ms), with the engine's memory at
 * BENCH_MAP_MEMORY (2GB).
 *
 * Alone: `npx tsx bench/map.ts` (BENCH_MAP_ACCOUNTS to change the size).
 */
export const MAP_ACCOUNTS = Number(process.env.BENCH_MAP_ACCOUNTS ?? 1_000_000)
/** The engine's memory (`--memory`), so that the peak can be compared at every size: 2GB unless said. */
export const MAP_MEMORY = process.env.BENCH_MAP_MEMORY ?? '2GB'
const TRANSACTIONS = 10

async function writeFile(path: string, header: string[], rows: (n: number) => string) {
  const out = createWriteStream(path)
  out.write(iconv.encode(csvRow(header), 'windows-1252'))
  let text = ''
  for (let n = 0; n < MAP_ACCOUNTS; n++) {
    text += rows(n)
    if (text.length > 1 << 20) {
      if (!out.write(iconv.encode(text, 'windows-1252'))) await once(out, 'drain')
      text = ''
    }
  }
  out.end(iconv.encode(text, 'windows-1252'))
  await once(out, 'close')
}

export async function writeBenchExtract(dir: string): Promise<{ rows: number; mb: number }> {
  const extract = join(dir, 'extract')
  mkdirSync(extract, { recursive: true })
  writeFileSync(join(dir, 'mapping.sql'), STARTER_MAPPING)
  const key = (n: number) => `B${String(n).padStart(8, '0')}`
  const header = (name: string) => SAMPLE_EXTRACT[name]![0]!
  const row = (cells: string[]) => csvRow(cells)
  await writeFile(join(extract, 'accounts.csv'), header('accounts.csv'), (n) =>
    row([key(n), 'Domestic', `${n} Harbour Row`, 'Bristol', 'Avon', 'BS1 5TY', n % 3 ? 'Email' : 'Post'])
  )
  await writeFile(join(extract, 'customers.csv'), header('customers.csv'), (n) =>
    row([key(n), 'Ms', 'Ada', `O’Brien ${n}`, `ada${n}@mailbox.org`, '0117 496 0123', 'Primary'])
  )
  await writeFile(join(extract, 'supply_addresses.csv'), header('supply_addresses.csv'), (n) =>
    row([key(n), '1', `${n} Harbour Row`, 'Bristol', 'Avon', 'BS1 5TY', '01/03/2021'])
  )
  await writeFile(join(extract, 'meter_points.csv'), header('meter_points.csv'), (n) =>
    row([key(n), '1', `19${String(n).padStart(11, '0')}`, 'Electricity', '01/03/2021'])
  )
  await writeFile(join(extract, 'agreements.csv'), header('agreements.csv'), (n) =>
    row([key(n), `19${String(n).padStart(11, '0')}`, 'E-1R-FIX-24', '01/03/2021'])
  )
  await writeFile(join(extract, 'balances.csv'), header('balances.csv'), (n) =>
    row([key(n), 'ENERGY', '(£12,345.60)', '£0.00', '30/09/2025'])
  )
  await writeFile(join(extract, 'transactions.csv'), header('transactions.csv'), (n) => {
    let text = ''
    for (let k = 0; k < TRANSACTIONS; k++) {
      text += row([
        key(n),
        'ENERGY',
        `T-${n}-${k}`,
        `${String(k + 1).padStart(2, '0')}/10/2025`,
        'CHG',
        '£1,234.56',
        '',
        '',
        'Usage\r\nfor October'
      ])
    }
    return text
  })
  for (const name of ['notes.csv', 'statements.csv', 'bills.csv']) {
    writeFileSync(join(extract, name), csvRow(header(name)))
  }
  const mb = ['accounts', 'customers', 'supply_addresses', 'meter_points', 'agreements', 'balances', 'transactions']
    .map((f) => statSync(join(extract, `${f}.csv`)).size)
    .reduce((a, b) => a + b, 0)
  return { rows: MAP_ACCOUNTS * (6 + TRANSACTIONS), mb: mb / 1024 / 1024 }
}

export interface MapMeasured {
  accounts: number
  rows: number
  extractMb: number
  seconds: number
  perSecond: number
  peakRssMb: number
  exitCode: number
  memory: string
}

/** Generates the extract in a temporary folder, maps it in a process of its own, measures it. */
export async function mapScenario(compiled = false): Promise<MapMeasured> {
  const dir = mkdtempSync(join(tmpdir(), 'amis-bench-map-'))
  try {
    const { rows, mb } = await writeBenchExtract(dir)
    const built = join(projectRoot, 'dist', 'src', 'cli', 'migrate', 'index.js')
    const args = compiled ? [built] : ['--import', 'tsx', join(projectRoot, 'src', 'cli', 'migrate', 'index.ts')]
    const started = Date.now()
    const child = spawn(
      process.execPath,
      [...args, 'map', join(dir, 'mapping.sql'), '--out', join(dir, 'lines.ndjson'), '--memory', MAP_MEMORY],
      {
        cwd: projectRoot,
        stdio: ['ignore', 'ignore', 'pipe']
      }
    )
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString()
    })
    let peak = 0
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMb(child.pid!))
    }, 100)
    const [code] = (await once(child, 'close')) as [number]
    clearInterval(sampler)
    const seconds = (Date.now() - started) / 1000
    if (code !== 0) throw new Error(`map exited ${code}: ${stderr}`)
    return {
      accounts: MAP_ACCOUNTS,
      rows,
      extractMb: Math.round(mb),
      seconds,
      perSecond: MAP_ACCOUNTS / seconds,
      peakRssMb: Math.round(peak),
      exitCode: code,
      memory: MAP_MEMORY
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

if (process.argv[1]?.endsWith('bench/map.ts')) {
  const m = await mapScenario()
  console.log(
    `map ${m.accounts} accounts (${m.rows} source rows, ${m.extractMb} MB): ${m.seconds.toFixed(1)} s, ` +
      `${Math.round(m.perSecond)} accounts/s, peak RSS ${m.peakRssMb} MB (--memory ${m.memory})`
  )
}
