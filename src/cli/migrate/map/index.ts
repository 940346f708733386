/**
 * `map`: an extract (one CSV file per entity, keyed by the source account number) turned into
 * batch entries, one line per account, by a mapping: SQL run by DuckDB over the extract's files.
 * Beside the lines, `<out>.sources.ndjson` names the source rows of every line, and the summary
 * accounts for every source row (read, used, rejected, orphan, repeated key).
 */
import {
  createReadStream,
  createWriteStream,
  existsSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync
} from 'node:fs'
import { once } from 'node:events'
import { pipeline } from 'node:stream/promises'
import { availableParallelism, tmpdir, totalmem } from 'node:os'
import { basename, dirname, join, relative, resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { openEngine, loadFile, rows, value, LISTED, type Engine } from './engine.js'
import { MapError } from './errors.js'
import { createEntryChecker } from './fields.js'
import { parseHeader, type DeclaredFile } from './header.js'
import { lineageOf, type TableColumns } from './lineage.js'
import { ident, literal } from './sql.js'
import { splitStatements } from './statements.js'
import { discard, writeTogether } from '../write-together.js'
import { sliceAccounts, SLICE_ACCOUNTS, type Slicing } from './slices.js'
import { renderMapSummary } from './summary.js'
import { prepareFile } from './transcode.js'
import type { FileSummary, MapSummary, SourceLine, SourcesHeader } from './types.js'

export { MapError } from './errors.js'
export { renderMapSummary } from './summary.js'
export type { FileSummary, MapSummary, SourceLine, SourcesHeader } from './types.js'

export interface MapOptions {
  /** The mapping file (path). */
  mapping: string
  /** The extract folder, instead of the one the mapping's header names (relative to the mapping). */
  extract?: string
  /** The lines file to write; the sources file is `<out>.sources.ndjson`. */
  out: string
  /** Only the summary's wording: the person said to go on despite problems. */
  goOn?: boolean
  /** Where the summary goes (standard error). */
  log?: (text: string) => void
  /** DuckDB's memory limit (default: half the machine's) and threads (default: the machine's, at most 4). */
  memoryLimit?: string
  threads?: number
  /** Accounts per slice of the last SELECT (default SLICE_ACCOUNTS): fewer use less memory. */
  sliceAccounts?: number
  /** Test hook: DuckDB's CSV buffer size in bytes. */
  bufferSize?: number
  /** The mapping and lines file as the person named them, for messages (default: the paths). */
  label?: { mapping?: string; out?: string }
}

/** Half the machine's memory, at least 1 GB: DuckDB spills past it where it can. */
export const DEFAULT_MEMORY_LIMIT = `${Math.max(1, Math.floor(totalmem() / 2 / 1024 ** 3))}GB`

/** Maps an extract to batch-entry lines and their sources. Throws MapError for what a person must fix. */
export async function runMapping(
  options: MapOptions
): Promise<{ lines: string; sources: string; summary: MapSummary }> {
  const mappingPath = resolve(options.mapping)
  const label = options.label?.mapping ?? basename(mappingPath)
  let sql: string
  try {
    sql = readFileSync(mappingPath, 'utf8')
  } catch (err) {
    const code = (err as { code?: unknown }).code
    throw new MapError(
      `${options.mapping}: ${code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a folder' : String(code)}`
    )
  }
  const header = parseHeader(sql, label)
  const extractDir =
    options.extract !== undefined ? resolve(options.extract) : resolve(dirname(mappingPath), header.extract)
  if (!existsSync(extractDir) || !statSync(extractDir).isDirectory()) {
    throw new MapError(`the extract folder ${options.extract ?? header.extract} (${extractDir}) does not exist`)
  }
  const statements = splitStatements(sql)
  if (statements.length === 0) {
    throw new MapError(`${label} has no SQL: its last statement must be the SELECT of the lines`)
  }

  const out = resolve(options.out)
  const sourcesPath = `${out}.sources.ndjson`
  const folder = mkdtempSync(join(tmpdir(), 'amis-map-'))
  let engine: Engine | undefined
  try {
    engine = await openEngine(folder, {
      memoryLimit: options.memoryLimit ?? DEFAULT_MEMORY_LIMIT,
      threads: options.threads ?? Math.min(4, availableParallelism())
    })
    const c = engine.connection
    const files: Record<string, FileSummary> = {}
    const tables: TableColumns[] = []
    for (const [n, declared] of header.files.entries()) {
      const read = await readExtractFile(c, declared, extractDir, folder, n, header.delimiter, options.bufferSize)
      files[declared.file] = read.summary
      tables.push({ table: declared.table, file: declared.file, columns: read.columns })
    }
    await findOrphansAndRepeats(c, header.files, files)

    // The mapping's own statements, settings locked first (no SET, no extension).
    await c.run('SET lock_configuration = true')
    const last = statements[statements.length - 1]!
    for (const s of statements.slice(0, -1)) await runStatement(c, s.text, s.line, label)
    const columns = await finalColumns(c, last.text, last.line, label)
    for (const needed of ['account_key', 'entry']) {
      if (!columns.includes(needed)) {
        throw new MapError(
          `${label}: the last statement (line ${last.line}) must give the columns account_key and entry; it gives ${columns.join(', ')}`
        )
      }
    }
    const lineage = await lineageOf(c, last.text, tables)
    const slicing = await sliceAccounts(c, header.files, options.sliceAccounts ?? SLICE_ACCOUNTS)
    const written = await writeLines(c, {
      declared: header.files,
      slicing,
      last,
      label,
      out,
      sourcesPath,
      ...(options.log ? { log: options.log } : {})
    })
    let summary: MapSummary
    try {
      summary = await summarise(c, header.files, slicing, files)
    } catch (err) {
      written.abandon()
      throw err
    }
    const sourcesHeader: SourcesHeader = {
      kind: 'sources',
      mapping: relativeTo(dirname(sourcesPath), mappingPath),
      extract: relativeTo(dirname(sourcesPath), extractDir),
      files,
      columns: lineage
    }
    await written.finish(JSON.stringify(sourcesHeader) + '\n')
    options.log?.(renderMapSummary(summary, { out: options.label?.out ?? options.out, goOn: options.goOn === true }))
    return { lines: out, sources: sourcesPath, summary }
  } finally {
    engine?.close()
    rmSync(folder, { recursive: true, force: true })
  }
}

const relativeTo = (from: string, path: string) => relative(from, path) || '.'

async function readExtractFile(
  c: Engine['connection'],
  declared: DeclaredFile,
  extractDir: string,
  folder: string,
  n: number,
  delimiter: string,
  bufferSize: number | undefined
): Promise<{ summary: FileSummary; columns: string[] }> {
  const source = resolve(extractDir, declared.file)
  if (!existsSync(source)) {
    throw new MapError(
      `${declared.file}: no such file in the extract folder ${extractDir} (declared on line ${declared.line} of the mapping)`
    )
  }
  if (statSync(source).isDirectory()) throw new MapError(`${declared.file} is a folder, not a CSV file`)
  const prepared = await prepareFile(source, declared.encoding, join(folder, `file-${n}.csv`))
  if (prepared.empty) throw new MapError(`${declared.file} is empty: it needs at least its line of column names`)
  const loaded = await loadFile(c, declared, prepared, {
    delimiter,
    folder,
    n,
    ...(bufferSize ? { bufferSize } : {})
  })
  if (
    declared.table === 'accounts' &&
    Number(await value(c, 'SELECT count(*) FROM accounts')) === 0 &&
    loaded.rejectedCount === 0
  ) {
    throw new MapError(`${declared.file}, the accounts file, has no rows`)
  }
  const summary: FileSummary = {
    table: declared.table,
    rows_read: loaded.rowsRead,
    rows_used: 0,
    rejected: loaded.rejected,
    rejected_count: loaded.rejectedCount,
    orphans: [],
    orphan_count: 0,
    repeated_keys: [],
    repeated_key_count: 0
  }
  return { summary, columns: loaded.columns }
}

async function findOrphansAndRepeats(
  c: Engine['connection'],
  declared: DeclaredFile[],
  files: Record<string, FileSummary>
): Promise<void> {
  const accounts = declared[0]!
  const accountKey = `trim(${ident(accounts.key)})`
  const summary = files[accounts.file]!
  const repeats = await rows(
    c,
    `SELECT ${accountKey} AS key, list(source_row ORDER BY source_row) AS rows FROM accounts GROUP BY 1 HAVING count(*) > 1 ORDER BY min(source_row) LIMIT ${LISTED}`
  )
  summary.repeated_keys = repeats.map((r) => ({ key: String(r.key), rows: (r.rows as number[]).map(Number) }))
  summary.repeated_key_count = Number(
    await value(c, `SELECT count(*) FROM (SELECT 1 FROM accounts GROUP BY ${accountKey} HAVING count(*) > 1)`)
  )
  for (const d of declared.slice(1)) {
    const key = `trim(${ident(d.key)})`
    const orphan = `FROM ${ident(d.table)} WHERE ${key} NOT IN (SELECT ${accountKey} FROM accounts)`
    const found = await rows(c, `SELECT source_row, ${key} AS key ${orphan} ORDER BY source_row LIMIT ${LISTED}`)
    files[d.file]!.orphans = found.map((r) => ({ row: Number(r.source_row), key: String(r.key) }))
    files[d.file]!.orphan_count = Number(await value(c, `SELECT count(*) ${orphan}`))
  }
}

/** The statement with the text before it and a closing parenthesis, its lines where they were. */
function wrap(text: string, before: string): string {
  const lead = /^\n*/.exec(text)![0].length
  return (lead > 0 ? '\n'.repeat(lead - 1) : '') + before + '\n' + text.slice(lead) + '\n)'
}

/** DuckDB's message, with the mapping's file name and the statement's line when DuckDB gives none. */
function sqlError(err: unknown, line: number, label: string): MapError {
  const message = err instanceof Error ? err.message : String(err)
  const at = /LINE (\d+):/.exec(message)
  const where = at ? `${label} line ${at[1]}` : `${label}, the statement that starts on line ${line}`
  if (/Out of Memory Error/i.test(message)) {
    // DuckDB's own advice names settings a mapping cannot change: say what the user can do.
    const first = message.split('\n')[0]!.trim()
    return new MapError(
      `${where}: ${first}\nThe mapping needs more memory than it was given: run it again with --memory and a larger size (this machine has ${Math.round(totalmem() / 1024 ** 3)} GB), or map the extract in parts (its accounts file split, the other files as they are).`
    )
  }
  return new MapError(`${where}: ${message.trim()}`)
}

async function runStatement(c: Engine['connection'], text: string, line: number, label: string): Promise<void> {
  try {
    await c.run(text)
  } catch (err) {
    throw sqlError(err, line, label)
  }
}

async function finalColumns(c: Engine['connection'], text: string, line: number, label: string): Promise<string[]> {
  const serialized = JSON.parse(String(await value(c, `SELECT json_serialize_sql(${literal(text)})`))) as {
    error?: boolean
    error_type?: string
    error_message?: string
  }
  if (serialized.error) {
    if (serialized.error_type === 'not implemented' || /only SELECT/i.test(serialized.error_message ?? '')) {
      throw new MapError(
        `${label}: the last statement (line ${line}) must be a SELECT giving account_key and entry, one row per account`
      )
    }
    throw sqlError(new Error(serialized.error_message), line, label)
  }
  try {
    const described = await rows(c, wrap(text, 'DESCRIBE ('))
    return described.map((r) => String(r.column_name))
  } catch (err) {
    throw sqlError(err, line, label)
  }
}

/** The lines of the slice's SELECT (`_map_part`): each has an account number of the accounts file, and an object. */
async function checkLines(c: Engine['connection'], accounts: DeclaredFile, label: string): Promise<void> {
  const blank = Number(await value(c, "SELECT count(*) FROM _map_part WHERE trim(coalesce(account_key, '')) = ''"))
  if (blank > 0) {
    throw new MapError(
      `${label}: ${blank} row${blank === 1 ? '' : 's'} of its SELECT ${blank === 1 ? 'has' : 'have'} no account_key`
    )
  }
  const unknown = `FROM _map_part WHERE account_key NOT IN (SELECT key FROM _map_slice)`
  const strangers = Number(await value(c, `SELECT count(*) ${unknown}`))
  if (strangers > 0) {
    const first = await value(c, `SELECT account_key ${unknown} ORDER BY i LIMIT 1`)
    throw new MapError(
      `${label}: the account_key of ${strangers} row${strangers === 1 ? '' : 's'} of its SELECT (the first: ${JSON.stringify(first)}) ${strangers === 1 ? 'is' : 'are'} not an account number of ${accounts.file}: account_key is the account's number as that file has it (its sources are found by it)`
    )
  }
  const notObject = Number(
    await value(c, "SELECT count(*) FROM _map_part WHERE entry IS NULL OR json_type(entry) <> 'OBJECT'")
  )
  if (notObject > 0) {
    const first = await value(
      c,
      "SELECT account_key FROM _map_part WHERE entry IS NULL OR json_type(entry) <> 'OBJECT' ORDER BY i LIMIT 1"
    )
    throw new MapError(
      `${label}: the entry of ${notObject} account${notObject === 1 ? '' : 's'} (the first: ${String(first)}) is not a JSON object`
    )
  }
}

/**
 * Runs the last SELECT for each slice and streams its lines and their sources (DuckDB's chunks,
 * written with back-pressure) to partial files; `_map_keys` keeps each line's number and account.
 * `finish` puts the sources file's header first and both files in place.
 */
async function writeLines(
  c: Engine['connection'],
  run: {
    declared: DeclaredFile[]
    slicing: Slicing
    last: { text: string; line: number }
    label: string
    out: string
    sourcesPath: string
    /** Where a line per slice goes when there are several. */
    log?: (text: string) => void
  }
): Promise<{ finish(header: string): Promise<void>; abandon(): void }> {
  const { declared, slicing, last, label, out, sourcesPath } = run
  const checker = createEntryChecker()
  const partial = `.partial-${process.pid}`
  const body = `${sourcesPath}${partial}.rows`
  const lines = createWriteStream(out + partial)
  const sources = createWriteStream(body)
  const removeAll = () => {
    discard(lines)
    discard(sources)
    for (const f of [out + partial, body, sourcesPath + partial]) rmSync(f, { force: true })
  }
  try {
    await c.run('CREATE TABLE _map_keys (n BIGINT, account_key VARCHAR)')
    const pieces = declared.map(
      (d, n) =>
        `CASE WHEN r${n}.rows IS NOT NULL THEN ${literal(JSON.stringify(d.file) + ':')} || to_json(r${n}.rows)::VARCHAR END`
    )
    // Each file's rows of the slice's accounts, by account (the tables show the slice).
    const joins = declared
      .map(
        (d, n) =>
          `LEFT JOIN (SELECT trim(${ident(d.key)}) AS key, list(source_row ORDER BY source_row) AS rows FROM ${ident(d.table)} GROUP BY 1) r${n} ON r${n}.key = m.account_key`
      )
      .join(' ')
    let line = 0
    for (let k = 0; k < slicing.count; k++) {
      await slicing.show(k)
      await runStatement(
        c,
        wrap(
          last.text,
          'CREATE OR REPLACE TABLE _map_part AS SELECT row_number() OVER () AS i, CAST(account_key AS VARCHAR) AS account_key, CAST(entry AS JSON) AS entry FROM ('
        ),
        last.line,
        label
      )
      await checkLines(c, declared[0]!, label)
      // A SELECT that does not read the slice (built on a table of every account) gives every
      // slice's lines each time: a slice keeps its own accounts' lines.
      await c.run(
        `CREATE OR REPLACE TABLE _map_this AS SELECT ${line} + row_number() OVER (ORDER BY i) AS n, account_key, entry
           FROM _map_part WHERE ${slicing.inSlice('account_key', k)}`
      )
      await c.run('DROP TABLE _map_part; INSERT INTO _map_keys SELECT n, account_key FROM _map_this')
      const result = await c.stream(
        `SELECT m.account_key, m.entry::VARCHAR AS entry, '{' || concat_ws(',', ${pieces.join(', ')}) || '}' AS rows
           FROM _map_this m ${joins} ORDER BY m.n`
      )
      for (;;) {
        const chunk = await result.fetchChunk()
        if (!chunk || chunk.rowCount === 0) break
        const keys = chunk.getColumnValues(0) as string[]
        const entries = chunk.getColumnValues(1) as string[]
        const sourceRows = chunk.getColumnValues(2) as string[]
        let text = ''
        let sourceText = ''
        for (let i = 0; i < chunk.rowCount; i++) {
          text += JSON.stringify(checker.line(JSON.parse(entries[i]!))) + '\n'
          sourceText += `{"line":${++line},"account":${JSON.stringify(keys[i])},"rows":${sourceRows[i]}}\n`
        }
        await writeTogether([
          [lines, text],
          [sources, sourceText]
        ])
      }
      await c.run('DROP TABLE _map_this')
      if (slicing.count > 1) {
        run.log?.(`mapping: slice ${k + 1} of ${slicing.count} done, ${line.toLocaleString('en')} lines so far\n`)
      }
    }
    checker.check(label)
    lines.end()
    sources.end()
    await Promise.all([once(lines, 'close'), once(sources, 'close')])
  } catch (err) {
    removeAll()
    throw err
  }
  return {
    abandon: removeAll,
    async finish(header: string) {
      try {
        const whole = createWriteStream(sourcesPath + partial)
        whole.write(header)
        await pipeline(createReadStream(body), whole)
        rmSync(body)
        renameSync(out + partial, out)
        renameSync(sourcesPath + partial, sourcesPath)
      } catch (err) {
        removeAll()
        throw err
      }
    }
  }
}

/** The summary's counts of the lines written: lines, repeated accounts, and each file's rows used. */
async function summarise(
  c: Engine['connection'],
  declared: DeclaredFile[],
  slicing: Slicing,
  files: Record<string, FileSummary>
): Promise<MapSummary> {
  const lineCount = Number(await value(c, 'SELECT count(*) FROM _map_keys'))
  const repeatedLines = (await rows(
    c,
    `SELECT account_key, list(n ORDER BY n) AS lines FROM _map_keys GROUP BY account_key HAVING count(*) > 1 ORDER BY min(n) LIMIT ${LISTED}`
  )) as Array<{ account_key: string; lines: number[] }>
  const repeatedLineCount = Number(
    await value(c, 'SELECT count(*) FROM (SELECT account_key FROM _map_keys GROUP BY account_key HAVING count(*) > 1)')
  )
  for (const [n, d] of declared.entries()) {
    files[d.file]!.rows_used = Number(
      await value(
        c,
        `SELECT count(*) FROM ${slicing.allRows(n)} WHERE trim(${ident(d.key)}) IN (SELECT account_key FROM _map_keys)`
      )
    )
  }
  return {
    files,
    lines: lineCount,
    repeated_lines: repeatedLines.map((r) => ({ key: r.account_key, lines: r.lines.map(Number) })),
    problems:
      repeatedLineCount +
      Object.values(files).reduce((sum, f) => sum + f.rejected_count + f.orphan_count + f.repeated_key_count, 0)
  }
}

/** A sources file: its header, and the sources of a line (read forward; a line before the last asked reads the file again). */
export async function readSources(
  file: string
): Promise<{ header: SourcesHeader; byLine(line: number): Promise<SourceLine | undefined> }> {
  let input = createInterface({ input: createReadStream(file), crlfDelay: Infinity })
  let iterator = input[Symbol.asyncIterator]()
  const first = await iterator.next()
  if (first.done) throw new MapError(`${file} is empty: not a sources file`)
  let header: SourcesHeader
  try {
    header = JSON.parse(first.value) as SourcesHeader
  } catch {
    header = { kind: undefined } as unknown as SourcesHeader
  }
  if (header.kind !== 'sources') throw new MapError(`${file} is not a sources file (written by map beside its lines)`)
  let last: SourceLine | undefined
  const restart = async () => {
    input.close()
    input = createInterface({ input: createReadStream(file), crlfDelay: Infinity })
    iterator = input[Symbol.asyncIterator]()
    await iterator.next()
    last = undefined
  }
  return {
    header,
    async byLine(line: number) {
      if (last && line < last.line) await restart()
      if (last && last.line === line) return last
      for (;;) {
        const next = await iterator.next()
        if (next.done) {
          input.close()
          return undefined
        }
        if (next.value.trim() === '') continue
        last = JSON.parse(next.value) as SourceLine
        if (last.line === line) return last
        if (last.line > line) return undefined
      }
    }
  }
}
