import { existsSync } from 'node:fs'
import { CODE, meaningOf } from '../../../../schemas/error-codes.js'
import { SECTIONS, type SectionListing } from '../../../../schemas/sections.js'
import { readSources, type FileSummary, type SourceLine, type SourcesHeader } from './index.js'

/**
 * A failure in the source's terms: which extract file and row a failed line was made from, and
 * the column its field came from. Reads the sources file `map` writes beside its lines
 * (`<lines>.sources.ndjson`: a header, then one line per output line), and turns a failure's step
 * and attr into the field of the batch entry (`transactions.2.amount`) and the mapping's column
 * for it (`transactions[].amount` → transactions.csv, column amount).
 */

export type { FileSummary, SourceLine, SourcesHeader }

/** The sources file `map` writes beside a lines file. */
export const sourcesFileOf = (lines: string) => `${lines}.sources.ndjson`

/** The sources file beside `lines`, when there is one. */
export function sourcesBeside(lines: string): string | undefined {
  const path = sourcesFileOf(lines)
  return existsSync(path) ? path : undefined
}

/**
 * The header of a sources file and the lines of it asked for (by line number), read forward in
 * one pass by the engine's reader: memory holds only those lines, however long the file.
 */
export async function sourcesFor(
  path: string,
  wanted: ReadonlySet<number>
): Promise<{ header: SourcesHeader; lines: Map<number, SourceLine> }> {
  const { header, byLine } = await readSources(path)
  const lines = new Map<number, SourceLine>()
  for (const line of [...wanted].sort((a, b) => a - b)) {
    const found = await byLine(line)
    if (found) lines.set(line, found)
  }
  return { header, lines }
}

const BY_NAME = new Map<string, SectionListing>(SECTIONS.map((s) => [s.name, s]))
const ACCOUNT_STEPS = new Set([null, 'read', 'status', 'validate', 'stage', 'create', 'dry_run'])

/**
 * The field of the batch entry a problem is at, from the step that failed and the problem's attr
 * (which is the account's for the account's steps, the section request's for a section): the
 * account's `customers.0.email` is `account.customers.0.email`; the notes request's
 * `notes.0.body` is `notes.0.body`; the historical agreements request's `agreements.1.end_date`
 * is `historical_agreements.1.end_date`. An entry's own shape problems (`invalid_request` at
 * stage) are at the entry already. Null: the whole line.
 */
export function entryField(step: string | null, code: string, attr: string | null): string | null {
  const section = step === null ? undefined : BY_NAME.get(step)
  if (!section) {
    if (!ACCOUNT_STEPS.has(step)) return attr
    // The entry's shape (`account` missing, an unknown key): already a path in the entry.
    if (code === CODE.invalid_request && step === 'stage') return attr
    return attr === null ? 'account' : `account.${attr}`
  }
  if (attr === null) return section.name
  const form = section.entry
  if ('list' in form) {
    const [first, ...rest] = attr.split('.')
    if (first === form.list) return [section.name, ...rest].join('.')
    // The account reference the request carries: the account's own fields.
    return `account.${attr}`
  }
  return `${section.name}.${attr}`
}

/** The key of the sources header's `columns` for a field: list indexes written `[]`. */
export const columnKey = (field: string) => field.replace(/\.\d+(?=\.|$)/g, '[]')

/** Where a field came from in the extract: the file and column the mapping takes it from, if one. */
export function columnOf(header: SourcesHeader | undefined, field: string | null) {
  if (!header || field === null) return undefined
  return header.columns[columnKey(field)]
}

/**
 * For a field taken from no one column, the file whose rows to show: the one its neighbours in
 * the entry come from (the other fields of its object), else the accounts file.
 */
export function rowsFileOf(header: SourcesHeader | undefined, field: string | null): string | undefined {
  if (!header) return undefined
  const key = field === null ? '' : columnKey(field)
  const parent = key.includes('.') ? key.slice(0, key.lastIndexOf('.') + 1) : ''
  const near = new Set(
    Object.entries(header.columns)
      .filter(([k]) => parent !== '' && k.startsWith(parent) && !k.slice(parent.length).includes('.'))
      .map(([, c]) => c.file)
  )
  if (near.size === 1) return [...near][0]
  return Object.entries(header.files).find(([, f]) => f.table === 'accounts')?.[0]
}

/** `accounts.csv row 2; transactions.csv rows 5, 6, 9`: the rows a line was made from (the first few of each file). */
export function rowsText(rows: Record<string, number[]>, only?: string, shown = 6): string {
  const files = only !== undefined && rows[only] ? [only] : Object.keys(rows)
  return files
    .map((file) => {
      const numbers = rows[file]!
      const more = numbers.length > shown ? ` … (${numbers.length})` : ''
      return `${file} row${numbers.length === 1 ? '' : 's'} ${numbers.slice(0, shown).join(', ')}${more}`
    })
    .join('; ')
}

/** One failed line: where it failed (checked here, or on the service) and its problems. */
export interface LineFailure {
  line: number
  external: string | null
  /** Where it failed: the local schema check, the service's dry run, or a run on the service. */
  where: 'schema check' | 'dry run' | 'service'
  step: string | null
  code: string
  errors: Array<{ code: string; attr: string | null; detail?: string }>
}

/** A line's codes, each once: its problems' codes, or its own code when it has none. */
export function codesOf(failure: Pick<LineFailure, 'code' | 'errors'>): string[] {
  const codes = [...new Set(failure.errors.map((e) => e.code))]
  return codes.length > 0 ? codes : [failure.code]
}

/** Lines per code, and the first few of each: what is printed, with memory bounded by `examples`. */
export class FailureTally {
  readonly byCode = new Map<string, { lines: number; examples: LineFailure[] }>()
  lines = 0
  constructor(readonly examples = 3) {}

  add(failure: LineFailure): void {
    this.lines++
    for (const code of codesOf(failure)) {
      let entry = this.byCode.get(code)
      if (!entry) this.byCode.set(code, (entry = { lines: 0, examples: [] }))
      entry.lines++
      if (entry.examples.length < this.examples) entry.examples.push(failure)
    }
  }

  /** The line numbers of every example kept: the sources lines to read. */
  exampleLines(): Set<number> {
    return new Set([...this.byCode.values()].flatMap((c) => c.examples.map((f) => f.line)))
  }
}

/** Text folded to `width` columns, each line after the first indented by `indent`. */
export function fold(text: string, width: number, indent: string): string[] {
  const out: string[] = []
  let line = ''
  for (const word of text.split(/\s+/).filter(Boolean)) {
    const prefix = out.length === 0 ? '' : indent
    if (line !== '' && prefix.length + line.length + 1 + word.length > width) {
      out.push(prefix + line)
      line = word
    } else line = line === '' ? word : `${line} ${word}`
  }
  if (line !== '') out.push((out.length === 0 ? '' : indent) + line)
  return out
}

/**
 * The failures grouped by code, most lines first: each code with its count and meaning, then
 * its first few lines in the source's terms (file and rows, field, column), and how many more.
 */
export function renderFailures(
  tally: FailureTally,
  sources: { header?: SourcesHeader; lines: Map<number, SourceLine> },
  width = 80
): string[] {
  const out: string[] = []
  const codes = [...tally.byCode].sort((a, b) => b[1].lines - a[1].lines || a[0].localeCompare(b[0]))
  for (const [code, { lines, examples }] of codes) {
    out.push('', `${code}: ${lines} line${lines === 1 ? '' : 's'}`)
    const meaning = meaningOf(code)
    if (meaning) out.push(...fold(meaning, width - 2, '  ').map((l, i) => (i === 0 ? `  ${l}` : l)))
    for (const failure of examples) {
      const source = sources.lines.get(failure.line)
      const account = source?.account ?? failure.external
      const where = failure.where
      out.push(
        `  line ${failure.line}${account ? `, account ${account}` : ''} (${where}${failure.step ? `, ${failure.step}` : ''})`
      )
      const problems = failure.errors.filter((e) => e.code === code)
      for (const problem of problems.length > 0 ? problems : [{ code, attr: null }]) {
        const field = entryField(failure.step, failure.code, problem.attr)
        const column = columnOf(sources.header, field)
        const from = column
          ? `${column.file}, column ${column.column}${source?.rows[column.file] ? `, ${rowsText(source.rows, column.file).replace(`${column.file} `, '')}` : ''}`
          : source
            ? rowsText(source.rows, rowsFileOf(sources.header, field))
            : undefined
        out.push(
          ...fold(`${field ?? '(the whole line)'}${from ? ` ← ${from}` : ''}`, width - 4, '      ').map((l, i) =>
            i === 0 ? `    ${l}` : l
          )
        )
      }
    }
    if (lines > examples.length) {
      out.push(`  … and ${lines - examples.length} more line${lines - examples.length === 1 ? '' : 's'}`)
    }
  }
  return out
}
