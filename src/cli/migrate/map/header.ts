/**
 * The mapping file's header: comment lines at its top that declare the extract.
 *
 *     -- extract: extract                          (folder of the CSV files, relative to the mapping)
 *     -- encoding: windows-1252                    (utf-8 | windows-1252 | latin-1; default utf-8)
 *     -- delimiter: ,                              (default ,)
 *     -- accounts: accounts.csv key account_number
 *     -- table customers: customers.csv key account_number
 *     -- table notes: notes.csv key account_number encoding utf-8
 *
 * Only comments, so the file stays plain SQL. Other comment lines are ignored; the header ends at
 * the first line that is not a comment or blank.
 */
import { MapError } from './errors.js'

export const ENCODINGS = ['utf-8', 'windows-1252', 'latin-1'] as const
export type Encoding = (typeof ENCODINGS)[number]

export interface DeclaredFile {
  /** The DuckDB table the file becomes (`accounts` for the accounts file). */
  table: string
  /** As declared, relative to the extract folder. */
  file: string
  /** The column holding the source account number. */
  key: string
  encoding: Encoding
  /** Line of the mapping file that declares it. */
  line: number
}

export interface MappingHeader {
  extract: string
  delimiter: string
  /** The accounts file first, then the other tables in the order declared. */
  files: DeclaredFile[]
}

const ALIASES: Record<string, Encoding> = {
  'utf-8': 'utf-8',
  utf8: 'utf-8',
  'windows-1252': 'windows-1252',
  cp1252: 'windows-1252',
  'latin-1': 'latin-1',
  latin1: 'latin-1',
  'iso-8859-1': 'latin-1'
}

function encodingOf(value: string, where: string): Encoding {
  const encoding = ALIASES[value.trim().toLowerCase()]
  if (!encoding) throw new MapError(`${where}: encoding must be one of ${ENCODINGS.join(', ')}, not "${value.trim()}"`)
  return encoding
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/
const FILE_LINE = /^(\S+|"[^"]+")\s+key\s+(\S+|"[^"]+")(?:\s+encoding\s+(\S+))?\s*$/i

const unquote = (s: string) => (s.startsWith('"') && s.endsWith('"') ? s.slice(1, -1) : s)

export function parseHeader(sql: string, label: string): MappingHeader {
  let extract: string | undefined
  let encoding: Encoding = 'utf-8'
  let delimiter = ','
  const declared: Array<Omit<DeclaredFile, 'encoding'> & { encoding?: Encoding }> = []
  const lines = sql.split(/\r?\n/)
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i]!.trim()
    if (text === '') continue
    if (!text.startsWith('--')) break
    const m = /^--\s*(extract|encoding|delimiter|accounts|table\s+([^:\s]+))\s*:\s*(.*)$/i.exec(text)
    if (!m) continue
    const where = `${label} line ${i + 1}`
    const name = m[1]!.toLowerCase()
    const value = m[3]!.trim()
    if (name === 'extract') extract = unquote(value)
    else if (name === 'encoding') encoding = encodingOf(value, where)
    else if (name === 'delimiter') {
      const d = value === '\\t' || value.toLowerCase() === 'tab' ? '\t' : unquote(value)
      if (d.length !== 1) throw new MapError(`${where}: the delimiter must be one character (or tab), not "${value}"`)
      delimiter = d
    } else {
      const table = name === 'accounts' ? 'accounts' : m[2]!
      if (!IDENTIFIER.test(table)) {
        throw new MapError(
          `${where}: a table name is letters, digits and _ (not starting with a digit), not "${table}"`
        )
      }
      if (table.toLowerCase() === 'accounts' && name !== 'accounts') {
        throw new MapError(`${where}: the accounts file is declared as "-- accounts: <file> key <column>"`)
      }
      const f = FILE_LINE.exec(value)
      if (!f) throw new MapError(`${where}: write it as "<file.csv> key <column>" (optionally "encoding <name>")`)
      if (declared.some((d) => d.table.toLowerCase() === table.toLowerCase())) {
        throw new MapError(`${where}: the table ${table} is declared twice`)
      }
      declared.push({
        table,
        file: unquote(f[1]!),
        key: unquote(f[2]!),
        line: i + 1,
        ...(f[3] ? { encoding: encodingOf(f[3], where) } : {})
      })
    }
  }
  const accounts = declared.find((d) => d.table === 'accounts')
  if (!accounts) {
    throw new MapError(
      `${label} declares no accounts file: its header needs a line "-- accounts: accounts.csv key <column>" (see docs/extract-layout.md)`
    )
  }
  const files = [accounts, ...declared.filter((d) => d !== accounts)].map((d) => ({
    ...d,
    encoding: d.encoding ?? encoding
  }))
  return { extract: extract ?? '.', delimiter, files }
}
