import t from 'tap'
import { createProgress } from '../../src/cli/migrate/progress.js'

/** The plain progress line (not a terminal), as a log or CI shows it. */
function lineOf(counts: Parameters<ReturnType<typeof createProgress>['update']>[0]): string {
  let written = ''
  const progress = createProgress({ write: (text) => (written += text), tty: false, intervalMs: 0, unit: 'lines' })
  progress.update(counts, 300)
  progress.finish()
  return written.trim().split('\n').at(-1)!
}

t.test("a dry run's progress says what would be created; a real run's what was", async (t) => {
  const dry = lineOf({ done: 300, failed: 3, wouldCreate: 297, rate: null })
  t.match(dry, /297 would be created/)
  t.notMatch(dry, /\bcreated\b(?<!would be created)/, 'never "created" alone')
  t.match(lineOf({ done: 300, failed: 3, created: 297, rate: null }), /297 created, 3 failed/)
})
