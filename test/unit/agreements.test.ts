import t from 'tap'
import { AppError } from '../../src/errors.js'
import { planAgreements, type StoredAgreement } from '../../src/modules/historical-agreements/service.js'

/** The historical agreements' rules, called without a database (the endpoint and batches share them). */

const TODAY = '2026-11-24'
const points = new Map([
  ['SP-1', 'point-1'],
  ['SP-2', 'point-2']
])
// SP-1's first current agreement (from the account import) starts on 2024-01-01; one history is stored.
const stored: StoredAgreement[] = [
  {
    supplyPointId: 'point-1',
    tariffCode: 'CURRENT',
    effectiveFrom: '2024-01-01',
    effectiveTo: null,
    historical: false
  },
  {
    supplyPointId: 'point-1',
    tariffCode: 'OLD',
    effectiveFrom: '2022-01-01',
    effectiveTo: '2023-01-01',
    historical: true
  }
]
const agreement = (changes: Record<string, string> = {}) => ({
  supply_point_identifier: 'SP-1',
  tariff_code: 'FIXED',
  effective_from: '2023-01-01',
  effective_to: '2024-01-01',
  ...changes
})

/** The codes and attrs a request is refused with, or the rows it would store. */
function outcome(agreements: Array<ReturnType<typeof agreement>>) {
  try {
    return { rows: planAgreements({ agreements }, points, stored, TODAY) }
  } catch (err) {
    if (!(err instanceof AppError)) throw err
    return { status: err.statusCode, errors: err.errors.map((e) => [e.code, e.attr]) }
  }
}

t.test('an agreement that fits before the current one is stored as history', async (t) => {
  t.strictSame(outcome([agreement()]), {
    rows: [
      {
        supplyPointId: 'point-1',
        tariffCode: 'FIXED',
        effectiveFrom: '2023-01-01',
        effectiveTo: '2024-01-01',
        historical: true
      }
    ]
  })
})

t.test('one identical to a stored history is a retry: nothing to store, no error', async (t) => {
  t.strictSame(outcome([agreement({ tariff_code: 'OLD', effective_from: '2022-01-01', effective_to: '2023-01-01' })]), {
    rows: []
  })
})

t.test('each rule with its code and attr', async (t) => {
  const cases: Array<[string, ReturnType<typeof agreement>, string, string]> = [
    [
      'an unknown supply point',
      agreement({ supply_point_identifier: 'SP-9' }),
      'supply_point_not_found',
      'agreements.0.supply_point_identifier'
    ],
    [
      'the end not after the start',
      agreement({ effective_to: '2023-01-01' }),
      'start_date_later_than_end_date',
      'agreements.0.effective_to'
    ],
    [
      'ending after the first current agreement starts',
      agreement({ effective_to: '2024-01-02' }),
      'historical_agreement_overlaps_current_agreement',
      'agreements.0.effective_to'
    ],
    [
      'overlapping a stored history',
      agreement({ effective_from: '2022-06-01' }),
      'gaps_or_overlaps_in_agreement_dates',
      'agreements.0.effective_from'
    ]
  ]
  for (const [what, a, code, attr] of cases) t.strictSame(outcome([a]), { status: 400, errors: [[code, attr]] }, what)
})

t.test('the end date is exclusive: touching agreements do not overlap', async (t) => {
  const touching = outcome([
    agreement({ effective_from: '2023-01-01', effective_to: '2023-06-01' }),
    agreement({ effective_from: '2023-06-01' })
  ])
  t.equal((touching as { rows: unknown[] }).rows.length, 2)
})

t.test("the request's own agreements may not overlap each other, on the same supply point only", async (t) => {
  t.strictSame(outcome([agreement(), agreement({ effective_from: '2023-06-01' })]), {
    status: 400,
    errors: [['gaps_or_overlaps_in_agreement_dates', 'agreements.1.effective_from']]
  })
  t.equal(
    (outcome([agreement(), agreement({ supply_point_identifier: 'SP-2' })]) as { rows: unknown[] }).rows.length,
    2,
    'the same dates on another supply point'
  )
})

t.test('every problem of every agreement is reported at once; nothing is stored', async (t) => {
  t.strictSame(outcome([agreement({ supply_point_identifier: 'SP-9' }), agreement({ effective_to: '2022-12-31' })]), {
    status: 400,
    errors: [
      ['supply_point_not_found', 'agreements.0.supply_point_identifier'],
      ['start_date_later_than_end_date', 'agreements.1.effective_to']
    ]
  })
})
