import t from 'tap'
import { jobWindow } from '../../src/rules/job-window.js'
import { failureCodesOf } from '../../src/modules/import-jobs/service.js'

/** An import job's start window, and its failed lines by code. */

const NOW = new Date('2026-11-28T12:00:00.400Z')
const problems = (asked: Parameters<typeof jobWindow>[0]) => {
  const checked = jobWindow(asked, NOW)
  return 'problems' in checked ? checked.problems.map((p) => [p.code, p.attr]) : []
}

t.test('the window: whole seconds, a past not_before is now, bounds', async (t) => {
  t.same(jobWindow({}, NOW), { window: { notBefore: null, notAfter: null } })
  t.same(jobWindow({ not_before: '2026-11-28T14:30:00.900+02:00', not_after: '2026-11-28T13:00:00Z' }, NOW), {
    window: { notBefore: new Date('2026-11-28T12:30:00Z'), notAfter: new Date('2026-11-28T13:00:00Z') }
  })
  t.same(jobWindow({ not_before: '2020-01-01T00:00:00Z' }, NOW), {
    window: { notBefore: new Date('2026-11-28T12:00:00Z'), notAfter: null }
  })
  t.same(problems({ not_before: '2026-12-05T12:00:00Z' }), [], 'exactly 7 days ahead is taken')
  t.same(problems({ not_before: '2026-12-05T12:00:01Z' }), [['invalid', 'not_before']])
  t.same(problems({ not_after: '2026-11-28T12:00:00Z' }), [['start_date_later_than_end_date', 'not_after']])
  t.same(problems({ not_after: '2026-11-28T12:00:01Z' }), [])
  t.same(problems({ not_before: '2026-11-28T13:00:00Z', not_after: '2026-11-28T13:00:00Z' }), [
    ['start_date_later_than_end_date', 'not_after']
  ])
})

t.test('failure codes: a line once per distinct code, most lines first, ties by code, at most 20', async (t) => {
  const counts = Object.fromEntries(
    Array.from({ length: 25 }, (_, i) => [`code_${String(i).padStart(2, '0')}`, (i % 3) + 1])
  )
  const top = failureCodesOf(counts)
  t.equal(top.length, 20)
  t.same(top.slice(0, 3), [
    { code: 'code_02', lines: 3 },
    { code: 'code_05', lines: 3 },
    { code: 'code_08', lines: 3 }
  ])
  t.same(failureCodesOf({ b: 1, a: 1, c: 0 }), [
    { code: 'a', lines: 1 },
    { code: 'b', lines: 1 }
  ])
})
