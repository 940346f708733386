/**
 * DuckDB, embedded, for one mapping run: a database file in a temporary folder, its memory and
 * threads set, no extension installed or loaded at run time (only the ones built into the
 * package: json, parquet, icu, core_functions), and the settings locked before the mapping's own
 * SQL runs. Every extract file becomes a table of VARCHAR columns plus `source_row`.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api'
import type { DeclaredFile } from './header.js'
import { MapError } from './errors.js'
import { ident, literal } from './sql.js'
import type { PreparedFile } from './transcode.js'

export interface EngineSettings {
  /** DuckDB's memory_limit, e.g. '1GB'. */
  memoryLimit: string
  threads: number
  /** Test hook: the CSV reader's buffer size in bytes (DuckDB's default otherwise). */
  bufferSize?: number
}

export interface Engine {
  connection: DuckDBConnection
  close(): void
}

export async function openEngine(folder: string, settings: EngineSettings): Promise<Engine> {
  const none = join(folder, 'no-extensions')
  const instance = await DuckDBInstance.create(':memory:', {
    threads: String(settings.threads),
    memory_limit: settings.memoryLimit,
    temp_directory: join(folder, 'spill'),
    preserve_insertion_order: 'true',
    // Offline: nothing is fetched. An INSTALL in a mapping finds an empty local folder and fails.
    autoinstall_known_extensions: 'false',
    autoload_known_extensions: 'false',
    allow_community_extensions: 'false',
    extension_directory: none,
    custom_extension_repository: none,
    autoinstall_extension_repository: none
  })
  const connection = await instance.connect()
  return {
    connection,
    close() {
      connection.closeSync()
      instance.closeSync()
    }
  }
}

export async function rows(connection: DuckDBConnection, sql: string): Promise<Array<Record<string, unknown>>> {
  const reader = await connection.runAndReadAll(sql)
  return reader.getRowObjectsJS() as Array<Record<string, unknown>>
}

export async function value(connection: DuckDBConnection, sql: string): Promise<unknown> {
  return Object.values((await rows(connection, sql))[0] ?? {})[0]
}

/** A row left out, as the summary lists it (`line`: the row as a spreadsheet shows it, header = 1). */
export interface Rejected {
  line: number
  reason: string
}

export interface LoadedFile {
  columns: string[]
  /** Data rows in the file, rejected ones included. */
  rowsRead: number
  rejected: Rejected[]
  rejectedCount: number
}

/** How many of each list the summary keeps (the counts are always whole). */
export const LISTED = 1000

const REASONS: Record<string, string> = {
  'MISSING COLUMNS': 'too few columns',
  'TOO MANY COLUMNS': 'too many columns',
  'UNQUOTED VALUE': 'broken quoting',
  'INVALID ENCODING': 'bytes not valid in UTF-8',
  'INVALID UNICODE': 'bytes not valid in UTF-8',
  'LINE SIZE OVER MAXIMUM': 'row too long'
}

/** The column names of a file's first line, as DuckDB's reader splits it, and its delimiter. */
async function headerOf(
  connection: DuckDBConnection,
  prepared: PreparedFile,
  declared: DeclaredFile,
  delimiter: string | undefined,
  folder: string,
  n: number
): Promise<{ columns: string[]; delimiter: string }> {
  const path = join(folder, `header-${n}.csv`)
  writeFileSync(path, prepared.headerLine + '\n')
  const dialect = `header=false, all_varchar=true, quote='"', escape='"'`
  let delim = delimiter
  if (delim === undefined) {
    const sniffed = await value(connection, `SELECT Delimiter FROM sniff_csv(${literal(path)}, ${dialect})`)
    delim = typeof sniffed === 'string' && sniffed.length === 1 ? sniffed : ','
  }
  const names = await rows(connection, `SELECT * FROM read_csv(${literal(path)}, ${dialect}, delim=${literal(delim)})`)
  const columns = Object.values(names[0] ?? {}).map((v) => (typeof v === 'string' ? v.trim() : ''))
  const seen = new Set<string>()
  for (const [i, c] of columns.entries()) {
    if (c === '') throw new MapError(`${declared.file}: column ${i + 1} of its first line has no name`)
    if (seen.has(c.toLowerCase())) throw new MapError(`${declared.file}: two columns are named "${c}"`)
    if (c === 'source_row') {
      throw new MapError(`${declared.file}: a column is named source_row, the name the engine gives the row number`)
    }
    seen.add(c.toLowerCase())
  }
  if (!columns.includes(declared.key)) {
    const near = columns.find((c) => c.toLowerCase() === declared.key.toLowerCase())
    const other = columns.length === 1 ? [';', '\t', '|'].find((d) => columns[0]!.includes(d)) : undefined
    const hint = other
      ? `; its first line is one name split by ${other === '\t' ? 'tabs' : `"${other}"`} rather than "${delim}": if that is the file's delimiter, say so at the top of the mapping: -- delimiter: ${other === '\t' ? 'tab' : other}`
      : ''
    throw new MapError(
      `${declared.file} has no column ${declared.key}, its declared key${near ? ` (it has ${near}: names are matched exactly)` : ''}; its columns: ${columns.join(', ')}${hint}`
    )
  }
  return { columns, delimiter: delim }
}

/**
 * Reads one extract file into its table: every column VARCHAR, plus `source_row`. Rows DuckDB's
 * reader rejects (and their row numbers) come from its reject tables; rows holding a byte the
 * encoding does not define, or a blank key, are taken out and reported as rejected too.
 */
export async function loadFile(
  connection: DuckDBConnection,
  declared: DeclaredFile,
  prepared: PreparedFile,
  options: { delimiter: string | undefined; folder: string; n: number; bufferSize?: number }
): Promise<LoadedFile> {
  const { connection: c, n } = { connection, n: options.n }
  const { columns, delimiter } = await headerOf(c, prepared, declared, options.delimiter, options.folder, n)
  const raw = `_map_raw_${n}`
  const rej = `_map_rej_${n}`
  const spec = columns.map((col) => `${literal(col)}: 'VARCHAR'`).join(', ')
  // The reader keeps the file's order (preserve_insertion_order, proven with several threads in
  // test/migrate-map-rows.test.ts): the k-th row read is the k-th data row not rejected.
  await c.run(
    `CREATE TABLE ${raw} AS SELECT row_number() OVER () AS _map_k, * FROM read_csv(${literal(prepared.path)},
       header=true, auto_detect=false, delim=${literal(delimiter)}, quote='"', escape='"', columns={${spec}},
       ${options.bufferSize ? `buffer_size=${options.bufferSize},` : ''}
       store_rejects=true, rejects_table=${literal(rej)}, rejects_scan=${literal(`_map_scan_${n}`)})`
  )
  await c.run(
    `CREATE TABLE _map_prej_${n} AS SELECT line::BIGINT AS line, min(error_type) AS type, min(error_message) AS message
       FROM ${rej} GROUP BY line`
  )
  // Row of the k-th row read: k + 1 (the header) + the rejected rows before it.
  await c.run(
    `CREATE TABLE _map_src_${n} AS SELECT r.*, (r._map_k + 1 + coalesce(j.i, 0))::INTEGER AS source_row
       FROM ${raw} r ASOF LEFT JOIN (
         SELECT g, max(i) AS i FROM (
           SELECT line - row_number() OVER (ORDER BY line) - 1 AS g, row_number() OVER (ORDER BY line) AS i FROM _map_prej_${n}
         ) GROUP BY g
       ) j ON r._map_k > j.g`
  )
  const rejected: Rejected[] = []
  let rejectedCount = 0
  for (const r of await rows(c, `SELECT line, type, message FROM _map_prej_${n} ORDER BY line LIMIT ${LISTED}`)) {
    const type = String(r.type)
    rejected.push({ line: Number(r.line), reason: `${REASONS[type] ?? type.toLowerCase()}: ${String(r.message)}` })
  }
  rejectedCount += Number(await value(c, `SELECT count(*) FROM _map_prej_${n}`))

  const key = ident(declared.key)
  const replacement = prepared.undefinedBytes.length > 0
  const hasUndefined = replacement
    ? columns.map((col) => `contains(coalesce(${ident(col)}, ''), '\uFFFD')`).join(' OR ')
    : 'false'
  const blank = `trim(coalesce(${key}, '')) = ''`
  if (replacement) {
    // The k-th U+FFFD of the file (in row order) is its k-th undefined byte.
    const count = columns.map(
      (col) => `length(coalesce(${ident(col)}, '')) - length(replace(coalesce(${ident(col)}, ''), '\uFFFD', ''))`
    )
    let next = 0
    for (const r of await rows(
      c,
      `SELECT source_row, ${count.join(' + ')} AS bytes FROM _map_src_${n} WHERE ${hasUndefined} ORDER BY source_row`
    )) {
      const bytes = prepared.undefinedBytes.slice(next, next + Number(r.bytes))
      next += Number(r.bytes)
      const hex = [...new Set(bytes)].map((b) => `0x${b.toString(16).toUpperCase()}`)
      rejected.push({
        line: Number(r.source_row),
        reason: `${hex.length === 1 ? 'a byte' : 'bytes'} not defined in ${prepared.encoding} (${hex.join(', ')}): is the file's encoding right?`
      })
      rejectedCount++
    }
  }
  for (const r of await rows(
    c,
    `SELECT source_row FROM _map_src_${n} WHERE ${blank} AND NOT (${hasUndefined}) ORDER BY source_row LIMIT ${LISTED}`
  )) {
    rejected.push({ line: Number(r.source_row), reason: `no account number (${declared.key} is blank)` })
  }
  rejectedCount += Number(await value(c, `SELECT count(*) FROM _map_src_${n} WHERE ${blank} AND NOT (${hasUndefined})`))
  rejected.sort((a, b) => a.line - b.line)
  rejected.splice(LISTED)

  const rowsRead = Number(
    await value(c, `SELECT (SELECT count(*) FROM ${raw}) + (SELECT count(*) FROM _map_prej_${n})`)
  )
  await c.run(
    `CREATE TABLE ${ident(declared.table)} AS SELECT ${columns.map((col) => (col === declared.key ? `trim(${key}) AS ${key}` : ident(col))).join(', ')}, source_row FROM _map_src_${n}
       WHERE NOT (${blank}) AND NOT (${hasUndefined}) ORDER BY source_row`
  )
  await c.run(`DROP TABLE ${raw}; DROP TABLE _map_src_${n}`)
  return { columns, rowsRead, rejected, rejectedCount }
}
