import { discard } from '../write-together.js'
import { createWriteStream, readdirSync, renameSync, rmSync } from 'node:fs'
import { basename, join } from 'node:path'
import { readState } from '../job-file.js'
import { readLines } from '../lines.js'
import {
  columnOf,
  entryField,
  sourcesFor,
  sourcesBeside,
  sourcesFileOf,
  type SourceLine,
  type SourcesHeader
} from './source-terms.js'

/**
 * The source rows of a job's failed lines, for `results`, `failed-lines` and `report`: the sources
 * file `map` wrote beside the job's input, found through the upload state `submit` keeps beside
 * it (`<input>.job.json`, in the folder the command runs in or a folder in it, as `map init`
 * makes: `first/mapping.lines.ndjson.job.json`), or named with `--sources`.
 */

/** The sources file of job `id`: beside the input whose upload state in `folder`, or in a folder in it, names the job. */
export function sourcesOfJob(folder: string, id: string): { path: string; label: string } | undefined {
  const found = sourcesIn(folder, id, '')
  if (found) return found
  let folders: string[]
  try {
    folders = readdirSync(folder, { withFileTypes: true })
      .filter((e) => e.isDirectory() && !e.name.startsWith('.') && e.name !== 'node_modules')
      .map((e) => e.name)
  } catch {
    return undefined
  }
  for (const name of folders.sort()) {
    const inside = sourcesIn(join(folder, name), id, `${name}/`)
    if (inside) return inside
  }
  return undefined
}

function sourcesIn(folder: string, id: string, prefix: string): { path: string; label: string } | undefined {
  let names: string[]
  try {
    names = readdirSync(folder).filter((name) => name.endsWith('.job.json'))
  } catch {
    return undefined
  }
  for (const name of names) {
    const state = readState(join(folder, name))
    if (state?.job_id !== id) continue
    const input = name.slice(0, -'.job.json'.length)
    const path = sourcesBeside(join(folder, input))
    if (path) return { path, label: prefix + basename(path) }
  }
  return undefined
}

type Result = {
  line: number
  outcome: string
  step?: string | null
  code?: string | null
  errors?: Array<{ code: string; attr: string | null; [key: string]: unknown }> | null
  [key: string]: unknown
}

/** A failed result with its source: the account key and rows, and each problem's field and column. */
export function withSource(result: Result, source: SourceLine | undefined, header: SourcesHeader): Result {
  if (!source) return result
  return {
    ...result,
    source: { account: source.account, rows: source.rows },
    ...(result.errors
      ? {
          errors: result.errors.map((e) => {
            const field = entryField(result.step ?? null, result.code ?? '', e.attr)
            const column = columnOf(header, field)
            return { ...e, ...(field !== null ? { field } : {}), ...(column ? { column } : {}) }
          })
        }
      : {})
  }
}

/**
 * Adds to each failed line of a results file its source (account key and rows per file) and to
 * each of its problems the field and the extract column; rewrites the file in place. Returns the
 * lines given a source.
 */
export async function annotateResults(path: string, sources: { path: string; label: string }): Promise<number> {
  const failed = new Set<number>()
  const reader = readLines(path, 256)
  try {
    for (let next = await reader.next(); next !== undefined; next = await reader.next()) {
      const r = JSON.parse(next.text) as Result
      if (r.outcome === 'failed') failed.add(r.line)
    }
  } finally {
    reader.close()
  }
  if (failed.size === 0) return 0
  const { header, lines } = await sourcesFor(sources.path, failed)
  const temporary = `${path}.${process.pid}.sources`
  const out = createWriteStream(temporary, { flags: 'wx' })
  const again = readLines(path, 256)
  let named = 0
  try {
    for (let next = await again.next(); next !== undefined; next = await again.next()) {
      let r = JSON.parse(next.text) as Result
      if (r.outcome === 'failed' && lines.has(r.line)) {
        r = withSource(r, lines.get(r.line), header)
        named++
      }
      if (!out.write(JSON.stringify(r) + '\n')) await new Promise<void>((resolve) => out.once('drain', () => resolve()))
    }
    await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())))
    renameSync(temporary, path)
  } catch (err) {
    discard(out)
    rmSync(temporary, { force: true })
    throw err
  } finally {
    again.close()
  }
  return named
}

/**
 * The sources file of a failed-lines file: the header of the job's, and for its line k the
 * sources of the job's k-th failed line (`failedLines`, in order), so that the fixed file
 * submitted again still names its source rows.
 */
export async function writeFailedSources(
  out: string,
  failedLines: number[],
  sources: { path: string; label: string }
): Promise<void> {
  const { header, lines } = await sourcesFor(sources.path, new Set(failedLines))
  const text = [
    JSON.stringify(header),
    ...failedLines.map((line, k) => {
      const source = lines.get(line)
      return JSON.stringify({ line: k + 1, account: source?.account ?? null, rows: source?.rows ?? {} })
    })
  ]
  await new Promise<void>((resolve, reject) => {
    const stream = createWriteStream(sourcesFileOf(out), { flags: 'wx' })
    stream.on('error', reject)
    stream.end(text.join('\n') + '\n', () => resolve())
  })
}
