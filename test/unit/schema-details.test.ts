import t from 'tap'
import { Type } from 'typebox'
import { entriesFromAjv } from '../../src/errors.js'
import { compileBody } from '../../src/validation.js'
import { Choice, DateString, DateTimeString, Money, NumberOfUnits, Text, Trimmed } from '../../schemas/fields.js'

/** The problems of `body` against a one-field schema, as `attr code: detail`. */
function problems(field: object, value: unknown): string[] {
  const validate = compileBody(Type.Object({ f: field as never }, { additionalProperties: false }))
  validate({ f: value })
  return entriesFromAjv(validate.errors ?? []).map((e) => `${e.code}: ${e.detail}`)
}

t.test('schema errors name the limit or the allowed values, in plain words; codes as before', async (t) => {
  const cases: Array<[string, object, unknown, string[]]> = [
    [
      'a choice lists what is allowed',
      Choice(['ONLINE', 'PRINT']),
      'PIGEON',
      ['invalid_choice: Not a valid choice: one of ONLINE, PRINT.']
    ],
    [
      'a long choice does not',
      Choice(Array.from({ length: 21 }, (_, i) => `C${i}`)),
      'X',
      ['invalid_choice: Not a valid choice.']
    ],
    ['a constant', Type.Literal('X'), 'Y', ['invalid_choice: Must be "X".']],
    ['a string', Type.String(), 5, ['invalid: A string is required.']],
    ['a whole number', Type.Integer(), 1.5, ['invalid: A whole number is required.']],
    ['a number', Type.Number(), 'one', ['invalid: A number is required.']],
    ['true or false', Type.Boolean(), 'no', ['invalid: Must be true or false.']],
    ['a list', Type.Array(Type.String()), 'x', ['invalid: A list is required.']],
    ['an object', Type.Object({}), [], ['invalid: An object is required.']],
    ['too long', Text(10), 'x'.repeat(11), ['max_length: Ensure this field has no more than 10 characters.']],
    [
      'too short (a stated minimum above 1)',
      Text(10, { min: 3 }),
      'ab',
      ['min_length: Ensure this field has at least 3 characters.']
    ],
    ['an empty string is blank, not too short', Text(10, { min: 3 }), '', ['blank: This field may not be blank.']],
    ['an empty list', Type.Array(Type.String(), { minItems: 1 }), [], ['min_items: This list may not be empty.']],
    [
      'too few items',
      Type.Array(Type.String(), { minItems: 3 }),
      ['a'],
      ['min_items: Ensure this list has at least 3 items.']
    ],
    [
      'too many items',
      Type.Array(Type.String(), { maxItems: 2 }),
      ['a', 'b', 'c'],
      ['max_items: Ensure this list has no more than 2 items.']
    ],
    [
      'the same item twice',
      Type.Array(Type.String(), { uniqueItems: true }),
      ['a', 'b', 'a'],
      ['duplicate_items: Items 0 and 2 are the same; each may appear once.']
    ],
    [
      'below a minimum',
      Type.Integer({ minimum: 1 }),
      0,
      ['min_value: Ensure this value is greater than or equal to 1.']
    ],
    [
      'not above an exclusive minimum',
      Type.Number({ exclusiveMinimum: 0 }),
      0,
      ['min_value: Ensure this value is greater than 0.']
    ],
    ['above a maximum', Type.Integer({ maximum: 5 }), 6, ['max_value: Ensure this value is less than or equal to 5.']],
    [
      'not below an exclusive maximum',
      Type.Number({ exclusiveMaximum: 5 }),
      5,
      ['max_value: Ensure this value is less than 5.']
    ],
    [
      'a date',
      DateString,
      '2026-02-30',
      ['invalid_date: Not a valid date: a real calendar day as YYYY-MM-DD is required.']
    ],
    [
      'a date and time',
      DateTimeString,
      '2026-11-01',
      ['invalid_datetime: Not a valid date and time: ISO 8601 with a time zone is required, e.g. 2026-11-01T09:00:00Z.']
    ],
    [
      'a pattern is quoted',
      Type.String({ pattern: '^[A-Z]+$' }),
      'abc',
      ['invalid: Does not match the pattern ^[A-Z]+$.']
    ],
    ['text with U+0000', Text(10), 'a\u0000b', ['invalid: May not hold U+0000 or a lone UTF-16 surrogate.']],
    [
      'an identifier with a space at its end',
      Trimmed(10),
      'EXT-1 ',
      ['invalid: May not start or end with whitespace, nor hold U+0000 or a lone UTF-16 surrogate.']
    ],
    ['blank stays blank', Text(10), '   ', ['blank: This field may not be blank.']],
    ['null stays null', Type.String(), null, ['null: This field may not be null.']]
  ]
  for (const [name, field, value, expected] of cases) t.same(problems(field, value), expected, name)
  const validate = compileBody(Type.Object({ a: Type.String() }, { additionalProperties: false }))
  validate({ b: 1 })
  t.same(
    entriesFromAjv(validate.errors ?? []).map((e) => [e.attr, e.code, e.detail]),
    [
      ['a', 'required', 'This field is required.'],
      ['b', 'unexpected_field', 'This field is not expected here.']
    ],
    'a missing field and an unexpected one'
  )
})

t.test('min_length is reported at the field that is too short, inside lists too', async (t) => {
  const validate = compileBody(
    Type.Object({ names: Type.Array(Text(10, { min: 3 })) }, { additionalProperties: false })
  )
  validate({ names: ['abc', 'ab', ''] })
  t.same(
    entriesFromAjv(validate.errors ?? []).map((e) => [e.attr, e.code]),
    [
      ['names.1', 'min_length'],
      ['names.2', 'blank']
    ]
  )
})

t.test('a decimal takes a decimal string or a JSON number wherever it is declared', async (t) => {
  const validate = compileBody(Type.Object({ f: Money() }, { additionalProperties: false }))
  for (const value of ['0.10', 0.1, -42.5, 1234567890]) {
    t.ok(validate({ f: value }), `${JSON.stringify(value)} is taken`)
  }
  // A decimal whose type leaves the number (or the string) out would refuse it before its own
  // check runs ("A string is required"): such a schema does not compile at all.
  for (const type of ['string', 'number', ['string', 'null']]) {
    t.throws(
      () => compileBody(Type.Object({ f: Type.Unsafe({ type, decimal: { integer: 10, scale: 10 } }) })),
      /a decimal schema must take a string and a number/,
      `type ${JSON.stringify(type)} is refused`
    )
  }
})

t.test('decimal problems say what is wrong, whether the value came as a string or a JSON number', async (t) => {
  const money = Money()
  const tooManyDigits = 'max_digits: Ensure that there are no more than 10 digits before the decimal point.'
  const tooManyPlaces = 'max_decimal_places: Ensure that there are no more than 10 decimal places.'
  t.same(problems(money, '12345678901'), [tooManyDigits], 'a string with too many digits is not told to be a string')
  t.same(problems(money, 12345678901), [tooManyDigits], 'a JSON number with too many digits: the same')
  t.same(problems(money, '0.01234567891'), [tooManyPlaces])
  t.same(problems(money, 0.01234567891), [tooManyPlaces])
  t.same(
    problems(money, 0.1 + 0.2),
    ['max_digits: A JSON number may carry at most 15 significant digits: send this value as a decimal string.'],
    'only a JSON number too precise to be exact is told to come as a string'
  )
  t.same(problems(NumberOfUnits(), '1234567890123'), [
    'max_digits: Ensure that there are no more than 12 digits before the decimal point.'
  ])
})
