import { guessExternal } from './input.js'
import { readLines } from './lines.js'
import type { ReportEntry } from './report.js'

/**
 * `--resume` after a run that completed part of the file: the lines its reports show completed
 * are skipped, nothing sent for them (`--resend-history` sends their post-import data again).
 */

/** Outcomes of an account whose line needs nothing more: created (or found completed) with all its post-import data. */
const COMPLETED: readonly string[] = ['created', 'already_completed']
/** Outcomes and steps only a dry run or a validation reports. */
const NOTHING_SENT: readonly string[] = ['would_create', 'valid', 'dry_run', 'validate']

/**
 * The lines earlier reports show completed: line number → its external account number. The
 * reports are read in the order given, a later entry of a line replacing an earlier one. A line
 * that cannot be read (the last one of a run that was killed) is left out: its account is looked
 * up again. The report of a dry run or a validation is passed over: it sent no post-import data,
 * so an imported account it found says nothing about them.
 */
export async function completedLines(paths: string[]): Promise<Map<number, string>> {
  const completed = new Map<number, string>()
  for (const path of paths) {
    const found = new Map<number, string | undefined>()
    let sentNothing = false
    const lines = readLines(path, 256)
    try {
      for (let next = await lines.next(); next !== undefined; next = await lines.next()) {
        let entry: Partial<ReportEntry> | undefined
        try {
          entry = JSON.parse(next.text) as Partial<ReportEntry>
        } catch {
          continue
        }
        if (typeof entry !== 'object' || entry === null || !Number.isSafeInteger(entry.line)) continue
        if (NOTHING_SENT.includes(String(entry.outcome)) || NOTHING_SENT.includes(String(entry.step))) {
          sentNothing = true
          break
        }
        const done = COMPLETED.includes(String(entry.outcome)) && typeof entry.external_account_number === 'string'
        found.set(entry.line!, done ? entry.external_account_number! : undefined)
      }
    } finally {
      lines.close()
    }
    if (sentNothing) continue
    for (const [line, external] of found) {
      if (external === undefined) completed.delete(line)
      else completed.set(line, external)
    }
  }
  return completed
}

/**
 * The lines of the file to skip (shown completed and still holding the same account) and the
 * number of lines left to migrate, read in one pass.
 */
export async function linesToSkip(
  file: string,
  completed: Map<number, string>
): Promise<{ skip: Set<number>; total: number }> {
  const skip = new Set<number>()
  let total = 0
  const lines = readLines(file, 1024)
  try {
    for (let next = await lines.next(); next !== undefined; next = await lines.next()) {
      if (next.text.trim() === '') continue
      const expected = completed.get(next.number)
      if (expected !== undefined && guessExternal(next.text) === expected) skip.add(next.number)
      else total++
    }
  } finally {
    lines.close()
  }
  return { skip, total }
}
