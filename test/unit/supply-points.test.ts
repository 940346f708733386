import t from 'tap'
import { accountRules, accountSchemaErrors, checkAccountData, passesForEachSetting } from '../../src/accounts/rules.js'
import { ruleContext } from '../../src/rules/context.js'
import { isMpanCore, isMprn, mpanCheckDigit, supplyPointIdentifierProblem } from '../../src/rules/supply-points.js'
import { account, otherSupplyAddress, SP, type Account } from '../helpers/account-data.js'

/**
 * GB supply point identifiers (a supplier's `supplyPointChecks: GB`): the MPAN core and MPRN
 * checks called directly, then through the account rules with each code's attr. The check digits
 * below were worked out by hand from the formula (the first 12 digits times 3, 5, 7, 13, 17, 19,
 * 23, 29, 31, 37, 41, 43, summed, mod 11, mod 10), not by the code under test.
 */

const TODAY = '2026-11-24'

t.test('MPAN cores', async (t) => {
  const valid: Array<[string, string]> = [
    ['1012345678903', 'distributor 10 (the lowest): sum 1334, mod 11 = 3'],
    ['1000000000003', 'distributor 10, zeros: 1×3 = 3'],
    ['2312345678900', 'distributor 23 (the last DNO): sum 1352 = 122×11 + 10, mod 10 = 0'],
    ['1000000000040', '1×3 + 4×43 = 175 = 15×11 + 10: mod 11 = 10, mod 10 = 0'],
    ['2412345678904', 'distributor 24 (the first IDNO)'],
    ['9912345678906', 'distributor 99'],
    ['1200012345679', 'distributor 12']
  ]
  for (const [core, why] of valid) t.ok(isMpanCore(core), `${core} is valid: ${why}`)

  const invalid: Array<[string, string]> = [
    ['1012345678904', 'check digit one too high'],
    ['1012345678902', 'check digit one too low'],
    ['1000000000041', 'check digit 1 where 0 is due'],
    ['2312345678901', 'check digit 1 where sum mod 11 = 10 gives 0'],
    ['1200012345678', 'the example account’s identifier: check digit 8 where 9 is due'],
    ['101234567890', '12 digits'],
    ['10123456789033', '14 digits'],
    ['1012345678903 ', 'a trailing space'],
    [' 1012345678903', 'a leading space'],
    ['10 1234 5678 903', 'spaces inside'],
    ['10123456789O3', 'a letter O for a zero'],
    ['A012345678903', 'a letter'],
    ['0012345678900', 'distributor 00 (its check digit right)'],
    ['0912345678901', 'distributor 09 (its check digit right)'],
    ['１０12345678903', 'full-width digits'],
    ['', 'empty']
  ]
  for (const [core, why] of invalid) t.notOk(isMpanCore(core), `${JSON.stringify(core)} is invalid: ${why}`)

  t.equal(mpanCheckDigit('101234567890'), 3)
  t.equal(mpanCheckDigit('231234567890'), 0, 'a sum of 10 mod 11 is check digit 0')
  t.equal(mpanCheckDigit('100000000004'), 0)
  t.equal(mpanCheckDigit('001234567890'), 0, 'distributor 00 has a check digit too (1331 = 121×11)')
  t.throws(() => mpanCheckDigit('10123456789'), 'only 12 digits have a check digit')
})

t.test('MPRNs', async (t) => {
  for (const mprn of ['123456', '012345', '1234567', '12345678', '123456789', '1234567890']) {
    t.ok(isMprn(mprn), `${mprn} (${mprn.length} digits) is valid`)
  }
  for (const mprn of ['12345', '12345678901', '12345A', 'ABCDEF', '123 456', ' 123456', '', '1234567890 ']) {
    t.notOk(isMprn(mprn), `${JSON.stringify(mprn)} is invalid`)
  }
})

t.test('the check by supplier setting and supply type', async (t) => {
  t.equal(supplyPointIdentifierProblem('NONE', 'ELECTRICITY', 'SP-1'), undefined, 'NONE checks nothing')
  t.equal(supplyPointIdentifierProblem('NONE', 'GAS', 'x'), undefined)
  t.equal(supplyPointIdentifierProblem('GB', 'ELECTRICITY', '1012345678903'), undefined)
  t.equal(supplyPointIdentifierProblem('GB', 'ELECTRICITY', '1012345678904'), 'invalid_mpan')
  t.equal(supplyPointIdentifierProblem('GB', 'ELECTRICITY', '1234567890'), 'invalid_mpan', 'an MPRN is no MPAN')
  t.equal(supplyPointIdentifierProblem('GB', 'GAS', '1234567890'), undefined)
  t.equal(supplyPointIdentifierProblem('GB', 'GAS', '1012345678903'), 'invalid_mprn', 'an MPAN is no MPRN')
})

t.test('through the account rules', async (t) => {
  const GB = { supplyPointChecks: 'GB' } as const
  const NONE = { supplyPointChecks: 'NONE' } as const
  const GOOD_MPAN = '1200012345679'
  const withPoints = (edit: (a: Account) => void) => account(edit)
  const problems = (body: Account, settings: typeof GB | typeof NONE) =>
    checkAccountData(structuredClone(body), TODAY, settings).errors.map((e) => [e.code, e.attr])

  // The example account's ELECTRICITY identifier has a wrong check digit.
  const example = account(() => {})
  t.strictSame(problems(example, GB), [['invalid_mpan', `${SP}.identifier`]])
  t.strictSame(problems(example, NONE), [], 'NONE: accepted as before')
  t.equal(
    checkAccountData(structuredClone(example), TODAY, GB).errors[0]!.detail,
    '1200012345678 is not a valid MPAN core: 13 digits, the first two a distributor id of 10 or above, the last the check digit.'
  )

  const good = withPoints((a) => {
    a.supply_addresses[0].supply_points[0].identifier = GOOD_MPAN
    a.supply_addresses.push(otherSupplyAddress('1234567890'))
  })
  t.strictSame(problems(good, GB), [], 'a good MPAN and MPRN pass')

  const badGas = withPoints((a) => {
    a.supply_addresses[0].supply_points[0].identifier = GOOD_MPAN
    a.supply_addresses.push(otherSupplyAddress('12345'))
  })
  t.strictSame(problems(badGas, GB), [['invalid_mprn', 'supply_addresses.1.supply_points.0.identifier']])
  t.equal(
    checkAccountData(structuredClone(badGas), TODAY, GB).errors[0]!.detail,
    '12345 is not a valid MPRN: 6 to 10 digits.'
  )
  t.strictSame(problems(badGas, NONE), [])

  // The second point of the first address, and every bad point at once.
  const second = withPoints((a) => {
    const points = a.supply_addresses[0].supply_points
    points.push({ ...structuredClone(points[0]), identifier: 'G-1', supply_type: 'GAS' })
    a.supply_addresses.push(otherSupplyAddress('ABCDEF'))
  })
  t.strictSame(problems(second, GB), [
    ['invalid_mpan', 'supply_addresses.0.supply_points.0.identifier'],
    ['invalid_mprn', 'supply_addresses.0.supply_points.1.identifier'],
    ['invalid_mprn', 'supply_addresses.1.supply_points.0.identifier']
  ])

  // Only fields that passed their schema checks are read.
  const tooLong = withPoints((a) => {
    a.supply_addresses[0].supply_points[0].identifier = '1'.repeat(65)
  })
  t.strictSame(problems(tooLong, GB), [['max_length', `${SP}.identifier`]], 'no invalid_mpan on a schema error')
  const badType = withPoints((a) => {
    a.supply_addresses[0].supply_points[0].supply_type = 'WATER'
  })
  t.strictSame(problems(badType, GB), [['invalid_choice', `${SP}.supply_type`]], 'nor with an unknown supply type')

  // Duplicates are reported as before, beside the GB check.
  const twice = withPoints((a) => {
    a.supply_addresses.push(otherSupplyAddress('1200012345678'))
  })
  t.strictSame(problems(twice, GB), [
    ['invalid_mpan', `${SP}.identifier`],
    ['duplicate_supply_point_identifiers', 'supply_addresses.1.supply_points.0.identifier'],
    ['invalid_mprn', 'supply_addresses.1.supply_points.0.identifier']
  ])
})

t.test('passesForEachSetting: validate judges before it knows the supplier', async (t) => {
  const passes = (body: Account) => {
    const data = structuredClone(body)
    const ctx = ruleContext(accountSchemaErrors(data), TODAY)
    accountRules(data, ctx)
    const before = ctx.errors.length
    const result = passesForEachSetting(data, ctx)
    t.equal(ctx.errors.length, before, 'nothing is reported in the context')
    return result
  }
  t.strictSame(passes(account(() => {})), { NONE: true, GB: false }, 'a bad MPAN fails GB only')
  t.strictSame(
    passes(
      account((a) => {
        a.supply_addresses[0].supply_points[0].identifier = '1200012345679'
      })
    ),
    { NONE: true, GB: true }
  )
  t.strictSame(
    passes(
      account((a) => {
        a.billing_address.postal_code = 'ZZZ 999'
      })
    ),
    { NONE: false, GB: false },
    'another problem fails both'
  )
})
