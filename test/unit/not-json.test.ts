import t from 'tap'
import { whyNotJson } from '../../src/modules/import-jobs/not-json.js'

/** Why an import job's line is not JSON: where the first problem is, quoting nothing of the line but one character. */

t.test('each kind of problem, at its place', async (t) => {
  const cases: Array<[string, string | undefined]> = [
    ['{"account": {}}', undefined],
    ['42', undefined],
    ['not JSON', "a value was expected at character 1, found 'n'"],
    ['{"account": {"x": 1,}}', "a property name in double quotes was expected at character 21, found '}'"],
    ['{"account": {"x" 1}}', "':' after a property name was expected at character 18, found '1'"],
    ['{"a": 1 "b": 2}', "',' or '}' was expected at character 9, found '\"'"],
    ['[1 2]', "',' or ']' was expected at character 4, found '2'"],
    ['{"account": {', 'it ends too soon: a property name in double quotes was expected at character 14'],
    ['{"a": 1', "it ends too soon: ',' or '}' was expected at character 8"],
    ['{"a": "open', 'it ends too soon: a string has no closing quote'],
    ['{"a": nul', "it ends too soon, inside 'null'"],
    ['{"a": 1}x', "more follows its JSON value: 'x' at character 9"],
    [
      '{"a": "\\q"}',
      "an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\u and four hex digits) was expected at character 9, found 'q'"
    ],
    ['{"a": "\t"}', 'a string holds the control character U+0009 at character 8 unescaped'],
    ['{"a": -x}', "a digit was expected at character 8, found 'x'"],
    ['{"a": 1.}', "a digit was expected at character 9, found '}'"],
    ['\uFEFF{"a": 1}', 'a value was expected at character 1, found U+FEFF'],
    // Characters count as a person counts them: é and an emoji are one each.
    ['{"é😀": x}', "a value was expected at character 8, found 'x'"],
    ["{'a': 1}", 'a property name in double quotes was expected at character 2, found "\'"'],
    ['', 'it ends too soon: a value was expected at character 1']
  ]
  for (const [text, reason] of cases) t.equal(whyNotJson(text), reason, JSON.stringify(text))
})

t.test('too deep or too wide to be read: said so', async (t) => {
  t.equal(whyNotJson('['.repeat(40) + ']'.repeat(40)), 'it is nested deeper than 32 levels')
  const wide = '{' + Array.from({ length: 1001 }, (_, i) => `"k${i}": 1`).join(', ') + '}'
  t.equal(whyNotJson(wide), 'an object of it has more than 1000 keys')
})

t.test('the reason never quotes the line: only the character at fault', async (t) => {
  const line = '{"account": {"first_name": "Jane", "last_name": Doe, "email": "jane@example.com"}}'
  const reason = whyNotJson(line)!
  t.equal(reason, `a value was expected at character ${line.indexOf('Doe') + 1}, found 'D'`)
  for (const part of ['Jane', 'Doe', 'jane@example.com', 'first_name']) t.notMatch(reason, part)
})
