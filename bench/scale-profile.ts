import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Sql } from 'postgres'

/**
 * Where a scale run's CPU per account goes, slice by slice (BENCH_SCALE_PROFILE=<folder>): the
 * server runs under `--cpu-prof` and PostgreSQL with pg_stat_statements, and each slice's share
 * of both is written to `<folder>/slices.json`. `npx tsx bench/scale-profile.ts <folder>` then
 * prints, per slice, the server's functions and the statements that took the most time per
 * account, so that what grows from the first slice to the last can be read off.
 */

/** The server's Node options for a profile of its whole run, written when it exits. */
export function profileArgs(folder: string): string[] {
  return ['--cpu-prof', `--cpu-prof-dir=${folder}`, '--cpu-prof-interval=2000']
}

/** The PostgreSQL settings that load pg_stat_statements. */
export const STATEMENT_SETTINGS = { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.max': '20000' }

interface Statement {
  query: string
  calls: number
  ms: number
}

async function statements(sql: Sql): Promise<Map<string, Statement>> {
  const rows = await sql<Array<{ id: string; query: string; calls: string; ms: number }>>`
    select queryid::text as id, query, calls::text as calls, total_exec_time as ms
    from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())`
  return new Map(rows.map((r) => [r.id, { query: r.query, calls: Number(r.calls), ms: r.ms }]))
}

interface SliceProfile {
  slice: number
  lines: number
  startMs: number
  endMs: number
  statements: Array<{ query: string; calls: number; ms: number }>
}

/** Records each slice's wall-clock span and its statements' time, into `<folder>/slices.json`. */
export async function sliceProfiler(folder: string, sql: Sql) {
  await sql`create extension if not exists pg_stat_statements`
  const slices: SliceProfile[] = []
  return {
    async start() {
      const before = await statements(sql)
      const startMs = Date.now()
      return async (slice: number, lines: number) => {
        const endMs = Date.now()
        const after = await statements(sql)
        // One line per statement's shape: inserts of any number of rows together.
        const shapes = new Map<string, Statement>()
        for (const [id, s] of after) {
          const calls = s.calls - (before.get(id)?.calls ?? 0)
          if (calls === 0) continue
          const query = s.query
            .replace(/\s+/g, ' ')
            .replace(/ values \(.*$/, ' values …')
            .slice(0, 160)
          const shape = shapes.get(query) ?? { query, calls: 0, ms: 0 }
          shape.calls += calls
          shape.ms += s.ms - (before.get(id)?.ms ?? 0)
          shapes.set(query, shape)
        }
        const diff = [...shapes.values()].sort((a, b) => b.ms - a.ms).slice(0, 40)
        slices.push({ slice, lines, startMs, endMs, statements: diff })
        writeFileSync(join(folder, 'slices.json'), JSON.stringify(slices, null, 2) + '\n')
      }
    }
  }
}

interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>
  startTime: number
  samples: number[]
  timeDeltas: number[]
}

/** Prints each slice's top functions (self time) and statements, in ms per account. */
function report(folder: string): void {
  const slices = JSON.parse(readFileSync(join(folder, 'slices.json'), 'utf8')) as SliceProfile[]
  const file = readdirSync(folder).find((f) => f.endsWith('.cpuprofile'))
  const server = JSON.parse(readFileSync(join(folder, 'server-start.json'), 'utf8')) as { wallMs: number }
  const profile = file ? (JSON.parse(readFileSync(join(folder, file), 'utf8')) as CpuProfile) : undefined
  const names = new Map(
    (profile?.nodes ?? []).map((n) => {
      const where = n.callFrame.url.replace(/^.*\/(node_modules\/|dist\/)/, '$1')
      return [n.id, `${n.callFrame.functionName || '(anonymous)'} ${where}:${n.callFrame.lineNumber + 1}`]
    })
  )
  for (const s of slices) {
    console.log(`\nslice ${s.slice} (${s.lines} accounts, ${((s.endMs - s.startMs) / 1000).toFixed(0)} s)`)
    if (profile) {
      const self = new Map<string, number>()
      let at = 0
      let total = 0
      for (let i = 0; i < profile.samples.length; i++) {
        at += profile.timeDeltas[i]!
        const wall = server.wallMs + at / 1000
        if (wall < s.startMs || wall > s.endMs) continue
        const name = names.get(profile.samples[i]!)!
        if (name.startsWith('(idle)')) continue
        const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000
        self.set(name, (self.get(name) ?? 0) + ms)
        total += ms
      }
      console.log(`  server, sampled: ${(total / s.lines).toFixed(3)} ms/account`)
      for (const [name, ms] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 15)) {
        console.log(`    ${(ms / s.lines).toFixed(4)}  ${name}`)
      }
    }
    const pg = s.statements.reduce((n, x) => n + x.ms, 0)
    console.log(`  statements: ${(pg / s.lines).toFixed(3)} ms/account`)
    for (const x of s.statements.slice(0, 14)) {
      console.log(
        `    ${(x.ms / s.lines).toFixed(4)}  ${(x.calls / s.lines).toFixed(3)} calls/account  ${(x.ms / x.calls).toFixed(3)} ms each  ${x.query}`
      )
    }
  }
}

if (process.argv[1]?.endsWith('scale-profile.ts')) report(process.argv[2]!)
