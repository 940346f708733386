import t from 'tap'
import { SECTION_NAMES, SECTIONS } from '../../schemas/sections.js'
import { AppError } from '../../src/errors.js'
import { examineEntry, requestsOf, rooted, twoForOneLedger } from '../../src/modules/batches/entries.js'
import { refusalOf, standingOf, supplierProblem, teamProblem } from '../../src/accounts/precheck.js'

/** A batch entry's shape and its sections' requests, without a database; and the account prechecks. */

const listing = (name: string) => SECTIONS.find((s) => s.name === name)!
const ref = { import_supplier: 'ACME', external_account_number: 'EXT-1' }
const ledgers = [
  { ledger_code: 'ENERGY', ledger_number: 'L-1' },
  { ledger_code: 'GAS', ledger_number: 'L-2' }
]

function errorOf(fn: () => unknown): AppError {
  try {
    fn()
  } catch (err) {
    if (err instanceof AppError) return err
    throw err
  }
  throw new Error('no error thrown')
}

t.test('examineEntry: an object with an account and known sections, for the batch supplier', async (t) => {
  const ok = examineEntry(
    { account: { external_account_number: 'EXT-1', import_supplier: 'ACME' }, notes: [] },
    3,
    'ACME',
    SECTION_NAMES
  )
  t.same(
    { index: ok.index, external: ok.external, failure: ok.failure },
    { index: 3, external: 'EXT-1', failure: undefined }
  )

  const notObject = examineEntry(['x'], 0, 'ACME', SECTION_NAMES)
  t.equal(notObject.external, null)
  t.match(notObject.failure, {
    step: 'stage',
    error: { statusCode: 400, code: 'invalid_request', errors: [{ code: 'invalid', attr: null }] }
  })

  const shape = examineEntry({ notes: [], tags: [] }, 0, 'ACME', SECTION_NAMES)
  t.same(
    shape.failure?.error.errors.map((e) => [e.code, e.attr]),
    [
      ['required', 'account'],
      ['unexpected_field', 'tags']
    ]
  )

  const other = examineEntry(
    { account: { external_account_number: 'EXT-1', import_supplier: 'OTHER' } },
    0,
    'ACME',
    SECTION_NAMES
  )
  t.match(other.failure, {
    step: 'stage',
    error: {
      code: 'account_failed_validation',
      errors: [{ code: 'import_supplier_mismatch', attr: 'import_supplier' }]
    }
  })
  t.equal(other.external, 'EXT-1', 'the number is kept for the result')

  // A supplier that is not a string is the account's own schema problem, found when it is checked.
  t.equal(examineEntry({ account: { import_supplier: 7 } }, 0, 'ACME', SECTION_NAMES).failure, undefined)
})

t.test('requestsOf: each section form makes the requests of its endpoint', async (t) => {
  t.same(requestsOf(listing('notes'), [{ body: 'x' }], ref, ledgers), [
    { request: { ...ref, notes: [{ body: 'x' }] }, root: '' }
  ])
  t.same(requestsOf(listing('historical_agreements'), [], ref, ledgers), [
    { request: { ...ref, agreements: [] }, root: '' }
  ])
  t.same(requestsOf(listing('payment_instruction'), { vendor: 'V', reference: 'R' }, ref, ledgers), [
    { request: { ...ref, vendor: 'V', reference: 'R' }, root: '' }
  ])
  t.match(
    errorOf(() => requestsOf(listing('payment_instruction'), [1], ref, ledgers)),
    { code: 'invalid_request', errors: [{ code: 'invalid', attr: null }] }
  )

  const billing = listing('historical_billing_documents')
  t.same(
    requestsOf(billing, { billing_document_type: 'PERIOD_BASED' }, ref, ledgers),
    [
      {
        request: { ...ref, billing_document_type: 'PERIOD_BASED', ledger_code: 'ENERGY', ledger_number: 'L-1' },
        root: ''
      }
    ],
    'ENERGY by default'
  )
  t.same(
    requestsOf(billing, [{ ledger_code: 'GAS' }, { ledger_code: 'ENERGY' }], ref, ledgers).map((r) => [
      r.root,
      r.request.ledger_number
    ]),
    [
      ['0.', 'L-2'],
      ['1.', 'L-1']
    ],
    'a list: one request per ledger, rooted at its index'
  )
  t.match(
    errorOf(() => requestsOf(billing, [{}, { ledger_code: 'WATER' }], ref, ledgers)),
    { code: 'invalid_request', errors: [{ code: 'ledger_not_found', attr: '1.ledger_code' }] }
  )
  t.match(
    errorOf(() => requestsOf(billing, { ledger_number: 'L-1' }, ref, ledgers)),
    { errors: [{ code: 'unexpected_field', attr: 'ledger_number' }] },
    'the service fills in the ledger number'
  )
  t.match(
    errorOf(() => requestsOf(billing, [{}, 'x'], ref, ledgers)),
    { errors: [{ code: 'invalid', attr: '1' }] }
  )
})

t.test('twoForOneLedger: two requests of a per-ledger section for one ledger', async (t) => {
  const billing = listing('historical_billing_documents')
  t.equal(twoForOneLedger(billing, [{}, { ledger_code: 'ENERGY' }]), true, 'ENERGY is the default')
  t.equal(twoForOneLedger(billing, [{}, { ledger_code: 'GAS' }]), false)
  t.equal(twoForOneLedger(billing, {}), false)
  t.equal(twoForOneLedger(listing('notes'), [{}, {}]), false, 'only per-ledger sections')
})

t.test("rooted: a list request's attrs under its index, once", async (t) => {
  const error = new AppError(400, 'invalid_request', 'Invalid request.', [
    { code: 'x', attr: 'a.b', detail: '' },
    { code: 'y', attr: null, detail: '' }
  ])
  const once = rooted(error, '2.') as AppError
  t.same(
    once.errors.map((e) => e.attr),
    ['2.a.b', '2']
  )
  t.equal(rooted(once, '5.'), once, 'an error already rooted stays as it is')
  t.equal(rooted(error, ''), error)
})

t.test('the account prechecks', async (t) => {
  t.same(standingOf(undefined), { kind: 'open' })
  t.same(standingOf({ state: 'STAGED', serviceAccountNumber: null }), { kind: 'open' })
  t.same(standingOf({ state: 'IMPORTED', serviceAccountNumber: 'A-1' }), {
    kind: 'already_imported',
    serviceAccountNumber: 'A-1'
  })
  t.same(standingOf({ state: 'SKIPPED', serviceAccountNumber: null }), { kind: 'skipped' })
  t.match(refusalOf({ kind: 'already_imported', serviceAccountNumber: 'A-1' }, 'EXT-1'), {
    statusCode: 400,
    code: 'account_already_imported',
    extra: { external_account_number: 'EXT-1', service_account_number: 'A-1' },
    errors: [{ code: 'account_already_imported', attr: 'external_account_number' }]
  })
  t.match(refusalOf({ kind: 'skipped' }, 'EXT-1'), {
    code: 'account_failed_validation',
    message: 'Account import skipped.',
    errors: [{ code: 'account_import_skipped', attr: null }]
  })
  t.match(supplierProblem(undefined, 'ACME', 'import_supplier_code'), {
    code: 'does_not_exist',
    attr: 'import_supplier_code'
  })
  t.match(supplierProblem({ code: 'ACME', status: 'Paused' }, 'ACME', 'import_supplier'), {
    code: 'import_supplier_migration_not_ongoing',
    attr: 'import_supplier',
    detail: 'The migration of import supplier ACME is Paused.'
  })
  t.equal(supplierProblem({ code: 'ACME', status: 'Ongoing' }, 'ACME', 'import_supplier'), undefined)
  t.match(teamProblem(null, 'Ops'), { code: 'operations_team_name_does_not_exist', attr: 'operations_team_name' })
  t.equal(teamProblem('team-id', 'Ops'), undefined)
})
