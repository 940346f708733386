import t from 'tap'
import { Big, decimalProblems, formatDecimal, parseDecimal, sumDecimals, toBig, withinCent } from '../../src/decimal.js'

/** Money is exact decimal arithmetic: text in, text out, never binary floating point. */

t.test('parsing: strings and exact JSON numbers', async (t) => {
  t.equal(String(parseDecimal('6.26')), '6.26')
  t.equal(String(parseDecimal(-40.5)), '-40.5')
  for (const bad of ['', '1.', '.5', '01', '1e3', ' 1', '+1', '1,5', null, true, {}]) {
    t.equal(parseDecimal(bad), 'invalid_decimal', `${JSON.stringify(bad)} is invalid_decimal`)
  }
  t.equal(parseDecimal(Infinity), 'max_digits')
  t.equal(parseDecimal(0.1 + 0.2), 'max_digits', 'a JSON number with more than 15 significant digits is not exact')
})

t.test('bounds: integer digits and decimal places, trailing zeros free', async (t) => {
  const money = { integer: 10, scale: 10 }
  t.strictSame(decimalProblems('1234567890.0123456789', money), [])
  t.strictSame(decimalProblems('12345678901', money), ['max_digits'])
  t.strictSame(decimalProblems('0.01234567891', money), ['max_decimal_places'])
  t.strictSame(
    decimalProblems('12345678901.12345678901', money),
    ['max_digits', 'max_decimal_places'],
    'both when both'
  )
  t.strictSame(decimalProblems('1.5000000000000', money), [], 'trailing zeros carry no value')
  t.strictSame(decimalProblems('x', money), ['invalid_decimal'])
})

t.test('formatting: at least two places, no trailing zeros beyond them', async (t) => {
  const cases: Array<[unknown, string]> = [
    [10, '10.00'],
    ['-0.5', '-0.50'],
    ['0.000', '0.00'],
    ['-0', '0.00'],
    ['1.23400', '1.234'],
    [53.24, '53.24']
  ]
  for (const [value, text] of cases) t.equal(formatDecimal(value), text, `${JSON.stringify(value)} → ${text}`)
  t.throws(() => toBig('abc'), TypeError, 'an invalid decimal is never silently a number')
})

t.test('sums are exact', async (t) => {
  t.equal(sumDecimals(['0.1', '0.2']).toString(), '0.3', 'not 0.30000000000000004')
  t.equal(formatDecimal(sumDecimals(Array.from({ length: 1000 }, () => '0.01'))), '10.00')
  t.ok(withinCent(new Big('6.26'), new Big('6.27')))
  t.notOk(withinCent(new Big('6.26'), new Big('6.28')))
})
