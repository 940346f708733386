/** The per-file summary of a mapping run, as a person reads it on standard error. */
import type { MapSummary } from './types.js'

const SHOWN = 10

/** The label of lines written to a temporary file (map check without --out). */
export const TEMPORARY = 'a temporary file'

export function renderMapSummary(summary: MapSummary, options: { out: string; goOn: boolean }): string {
  // Short names, so that a long file name and millions of rows fit 80 columns ("repeats": account
  // numbers more than once in the accounts file; "unused": rows no line was made from).
  const head = ['file', 'read', 'used', 'rejected', 'orphans', 'repeats', 'unused']
  const body = Object.entries(summary.files).map(([file, f]) => [
    file,
    String(f.rows_read),
    String(f.rows_used),
    String(f.rejected_count),
    f.table === 'accounts' ? '-' : String(f.orphan_count),
    f.table === 'accounts' ? String(f.repeated_key_count) : '-',
    String(Math.max(0, f.rows_read - f.rows_used - f.rejected_count - f.orphan_count))
  ])
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)))
  const row = (cells: string[]) =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join('  ')
      .trimEnd() + '\n'
  let text = row(head) + body.map(row).join('')
  const details: string[] = []
  for (const [file, f] of Object.entries(summary.files)) {
    for (const r of f.rejected.slice(0, SHOWN)) details.push(`  ${file} row ${r.line}: rejected, ${r.reason}`)
    if (f.rejected_count > SHOWN) {
      details.push(`  ${file}: ${f.rejected_count - SHOWN} more rejected rows (all in the sources file's header)`)
    }
    for (const o of f.orphans.slice(0, SHOWN)) {
      details.push(`  ${file} row ${o.row}: account ${o.key} is not in the accounts file`)
    }
    if (f.orphan_count > SHOWN) details.push(`  ${file}: ${f.orphan_count - SHOWN} more orphan rows`)
    for (const k of f.repeated_keys.slice(0, SHOWN)) {
      details.push(`  ${file} rows ${k.rows.join(', ')}: account ${k.key} more than once`)
    }
    if (f.repeated_key_count > SHOWN) {
      details.push(`  ${file}: ${f.repeated_key_count - SHOWN} more repeated account numbers`)
    }
  }
  for (const r of summary.repeated_lines.slice(0, SHOWN)) {
    details.push(`  lines ${r.lines.join(', ')}: the mapping gives account ${r.key} more than one line`)
  }
  if (details.length > 0) text += '\n' + details.join('\n') + '\n'
  const lines = `${summary.lines} line${summary.lines === 1 ? '' : 's'}`
  text +=
    options.out === TEMPORARY
      ? `\n${lines} mapped, kept until the check ends (--out <file> keeps them, and their sources beside them)\n`
      : `\n${lines} written to ${options.out} (sources: ${options.out}.sources.ndjson)\n`
  if (summary.problems > 0) {
    text += options.goOn
      ? `${summary.problems} problem${summary.problems === 1 ? '' : 's'} above: going on (--go-on); the rows named are not in the lines\n`
      : `${summary.problems} problem${summary.problems === 1 ? '' : 's'} above: fix the extract or the mapping, or pass --go-on to go on without those rows\n`
  }
  return text
}
