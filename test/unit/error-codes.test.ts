import t from 'tap'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative, sep } from 'node:path'
import ts from 'typescript'
import {
  CLIENT_CODES,
  CODE,
  ERROR_CODES,
  formatDetail,
  meaningOf,
  type DetailParams,
  type ErrorCode
} from '../../schemas/error-codes.js'
import { STEP_NAMES } from '../../schemas/failures.js'

/**
 * Strings of src/ and schemas/ that spell a code but are not one, each with why. Every other such
 * literal is a code, and is named through CODE (or CLIENT_CODE) so that it comes from the catalogue.
 */
const NOT_CODES: ReadonlyArray<{ file: string; literal: string; why: string }> = [
  {
    file: 'src/errors.ts',
    literal: 'required',
    why: 'the Ajv keyword `required` (a missing property), tested and described; its code is CODE.required'
  },
  {
    file: 'src/validation.ts',
    literal: 'required',
    why: "the Ajv keyword `omitEmpty` runs before (`before: 'required'`)"
  },
  { file: 'src/plugins/openapi.ts', literal: 'required', why: 'a JSON Schema keyword the OpenAPI document keeps' },
  { file: 'src/plugins/openapi.ts', literal: 'null', why: 'the JSON Schema type null' },
  { file: 'src/modules/import-jobs/not-json.ts', literal: 'null', why: "JSON's literal null, read by the checker" },
  {
    file: 'src/cli/migrate/map/schema-check.ts',
    literal: 'null',
    why: 'the JSON Schema type null the document adds beside a JSON value'
  },
  { file: 'src/rules/contact.ts', literal: 'invalid', why: 'the .invalid top-level domain of test e-mail addresses' }
]

/** Where the codes are defined, and so spelt out. */
const CATALOGUE = 'schemas/error-codes.ts'

const codes = Object.keys(ERROR_CODES) as ErrorCode[]

t.test('a wording is filled in from its placeholders, typed by them', async (t) => {
  t.equal(
    formatDetail('invalid_postcode', { postcode: 'BS1 5T', country: 'GB' }),
    'BS1 5T is not a valid postcode in GB.'
  )
  t.equal(formatDetail('throttled', { seconds: 12 }), 'Request was throttled. Expected available in 12 seconds.')
  t.equal(formatDetail('date_in_future', { field: 'bill_period_to_date' }), 'bill_period_to_date is in the future.')
  t.equal(formatDetail('energy_ledger_required', {}), 'An ENERGY ledger is required.')
  t.equal(formatDetail('invalid', { detail: 'A string is required.' }), 'A string is required.')
  // A value holding a placeholder's spelling is not filled in again.
  t.equal(formatDetail('does_not_exist', { supplier: '{supplier}' }), 'Import supplier {supplier} does not exist.')
  t.equal(
    formatDetail('invalid_postcode', { postcode: '$& $1', country: 'GB' }),
    '$& $1 is not a valid postcode in GB.',
    'replacement patterns stay text'
  )

  const fixed: DetailParams<'energy_ledger_required'> = {}
  const two: DetailParams<'invalid_postcode'> = { postcode: 'x', country: 'GB' }
  t.ok(fixed && two)
  // Checked by the compiler only (npm run typecheck), never run.
  const typeErrors = () => [
    // @ts-expect-error a placeholder left out
    formatDetail('invalid_postcode', { postcode: 'x' }),
    // @ts-expect-error a name the wording does not have
    formatDetail('date_in_future', { field: 'x', when: 'now' }),
    // @ts-expect-error a code the catalogue does not have
    formatDetail('no_such_code', {})
  ]
  t.type(typeErrors, 'function')
  t.equal(
    formatDetail('invalid_postcode', { postcode: 'x' } as never),
    'x is not a valid postcode in {country}.',
    'a value missing at run time leaves its placeholder'
  )
})

t.test('CODE names each code by itself', async (t) => {
  t.equal(CODE.invalid_postcode, 'invalid_postcode')
  t.same(Object.keys(CODE), codes)
  for (const code of codes) t.equal(CODE[code], code)
})

t.test('every entry is complete: a status, a kind, steps of STEP_NAMES, one fixed sentence of meaning', async (t) => {
  for (const code of codes) {
    const spec = ERROR_CODES[code] as (typeof ERROR_CODES)[ErrorCode] & { answerDetail?: string }
    t.match(code, /^[a-z][a-z_]*$/, `${code}: snake_case`)
    t.ok(Number.isInteger(spec.status) && spec.status >= 400 && spec.status < 600, `${code}: an error status`)
    t.ok(
      spec.steps.every((s) => (STEP_NAMES as readonly string[]).includes(s)),
      `${code}: steps are step names`
    )
    t.equal(new Set(spec.steps).size, spec.steps.length, `${code}: each step once`)
    t.match(spec.meaning, /^[A-Z].{20,220}\.$/, `${code}: a sentence`)
    t.notMatch(spec.meaning, /[{}]/, `${code}: no placeholder in the meaning`)
    if (spec.answerDetail !== undefined) t.notMatch(spec.answerDetail, /[{}]/, `${code}: the answer's detail is fixed`)
    if (spec.kind === 'top' || spec.kind === 'graphql') {
      t.equal(spec.answerDetail, undefined, `${code}: a top-level code has one detail`)
    }
  }
  for (const [code, { meaning }] of Object.entries(CLIENT_CODES)) {
    t.notOk(code in ERROR_CODES, `${code}: the client's code is not also a service code`)
    t.match(meaning, /^[A-Z].{20,220}\.$/, `${code}: a sentence`)
  }
  t.equal(meaningOf('invalid_postcode'), ERROR_CODES.invalid_postcode.meaning)
  t.equal(meaningOf('network_error'), CLIENT_CODES.network_error.meaning)
  t.match(meaningOf('http_502'), /HTTP status/)
  t.equal(meaningOf('toString'), undefined, "only the catalogue's own keys")
  t.equal(meaningOf('no_such_code'), undefined)
})

/** Every `.ts` file under a folder. */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : []
  })
}

/** Codes named where the service raises or maps them: `CODE.x`, or a string literal. */
const RAISED = [
  /\b(?:entry|report|notFound|fail|problem|answer|fieldError)\(\s*(?:'|CODE\.)([a-z_]+)/g,
  /new AppError\(\s*\d{3},\s*(?:'|CODE\.)([a-z_]+)/g,
  /\bcode: (?:'|CODE\.)([a-z_]+)/g,
  /ErrorWithProps\([^)]*\{ code: (?:'|CODE\.)([a-z_]+) \}/g
]

t.test('every code the service raises by name is in the catalogue', async (t) => {
  const found = new Map<string, string>()
  const add = (code: string, where: string) => {
    if (!found.has(code)) found.set(code, where)
  }
  for (const file of [...sources('src'), ...sources('schemas')]) {
    if (file.startsWith(join('src', 'cli'))) continue
    const text = readFileSync(file, 'utf8')
    for (const pattern of RAISED) for (const m of text.matchAll(pattern)) add(m[1]!, file)
    // Schema-named codes (`errorCodes: {keyword: code}`).
    for (const m of text.matchAll(/errorCodes: \{([^}]*)\}/g)) {
      for (const v of m[1]!.matchAll(/(?:'|CODE\.)([a-z_]+)/g)) add(v[1]!, file)
    }
  }
  // The keyword mapping and the project's own keywords' codes.
  const errors = readFileSync(join('src', 'errors.ts'), 'utf8')
  const mapping = /const codeByKeyword[^{]*\{([^}]*)\}/.exec(errors)![1]!
  for (const v of mapping.matchAll(/: (?:'|CODE\.)([a-z_]+)/g)) add(v[1]!, 'codeByKeyword')
  const validation = readFileSync(join('src', 'validation.ts'), 'utf8')
  const decimal = /const DECIMAL_MESSAGES[^{]*\{([^}]*)\}/.exec(validation)![1]!
  for (const v of decimal.matchAll(/^\s*([a-z_]+):/gm)) add(v[1]!, 'DECIMAL_MESSAGES')
  for (const code of ['null', 'blank', 'required', 'min_value']) add(code, 'entriesFromAjv')

  t.ok(found.size > 60, `${found.size} codes found in the code`)
  for (const [code, where] of found) t.ok(code in ERROR_CODES, `${code} (${where}) is in schemas/error-codes.ts`)
})

/** The string literals (and templates without substitutions) of a file that spell one of `codes`, with their lines. */
function codeLiterals(file: string, codes: ReadonlySet<string>): Array<{ line: number; literal: string }> {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true)
  const found: Array<{ line: number; literal: string }> = []
  const visit = (node: ts.Node): void => {
    if ((ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) && codes.has(node.text)) {
      found.push({ line: source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1, literal: node.text })
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

t.test('no error-code literal outside the catalogue', async (t) => {
  const codes = new Set([...Object.keys(ERROR_CODES), ...Object.keys(CLIENT_CODES)])
  const hits: string[] = []
  const used = new Set<(typeof NOT_CODES)[number]>()
  for (const path of [...sources('src'), ...sources('schemas')]) {
    const file = relative('.', path).split(sep).join('/')
    if (file === CATALOGUE) continue
    for (const { line, literal } of codeLiterals(path, codes)) {
      const allowed = NOT_CODES.find((a) => a.file === file && a.literal === literal)
      if (allowed) used.add(allowed)
      else hits.push(`${file}:${line} ${literal}`)
    }
  }
  t.same(
    hits,
    [],
    'every code is named through CODE or CLIENT_CODE (or, not being a code, listed in NOT_CODES with why)'
  )
  t.same(
    NOT_CODES.filter((a) => !used.has(a)).map((a) => `${a.file} ${a.literal}`),
    [],
    'every NOT_CODES entry still matches a literal'
  )
  t.ok(
    NOT_CODES.every((a) => a.why.length > 0),
    'each with its reason'
  )
})

/**
 * The codes whose wording is the whole detail ('{detail}'), each with why: a schema keyword reports
 * them, their detail built from the keyword (src/errors.ts, the keywords of src/validation.ts), so a
 * call site raising one by hand writes a sentence of its own. Every other code is raised in the
 * catalogue's wording, its placeholders filled in: a call site never writes its detail.
 */
const FREE_WORDINGS: ReadonlyArray<{ code: ErrorCode; why: string }> = [
  { code: 'blank', why: 'minLength, pattern, enum, format or the decimal keyword on an empty string' },
  { code: 'duplicate_items', why: 'uniqueItems, naming the two items' },
  {
    code: 'invalid',
    why: 'type, pattern, format and the jsonValue keyword; a body, URL or argument that cannot be read'
  },
  { code: 'invalid_choice', why: 'enum, const and discriminator, listing the values allowed' },
  { code: 'invalid_date', why: 'format and type of a date field (errorCodes)' },
  { code: 'invalid_datetime', why: 'format and type of a date-time field (errorCodes)' },
  { code: 'invalid_decimal', why: 'type of an amount (errorCodes) and the decimal keyword' },
  { code: 'max_decimal_places', why: "the decimal keyword, naming the field's scale" },
  { code: 'max_depth', why: 'the jsonValue keyword, naming the depth allowed' },
  { code: 'max_digits', why: "the decimal keyword, naming the field's digits" },
  { code: 'max_items', why: 'maxItems, naming the limit' },
  { code: 'max_length', why: 'maxLength and the jsonValue keyword, naming the limit' },
  { code: 'max_value', why: 'maximum and exclusiveMaximum, naming the limit' },
  { code: 'min_items', why: 'minItems, naming the limit' },
  { code: 'min_length', why: 'minLength, naming the limit' },
  { code: 'min_value', why: 'minimum, exclusiveMinimum and the decimal keyword, naming the limit' },
  { code: 'null', why: 'type, given null' },
  { code: 'required', why: 'required and dependentRequired' },
  { code: 'unexpected_field', why: 'additionalProperties and unevaluatedProperties' }
]

/**
 * The calls of a file that raise a code named through CODE with a sentence written at the call:
 * an argument object with a `detail` (`problem(CODE.x, attr, { detail: '…' })`), or a string after
 * the code (`ctx.report`, the keywords' own `(code, message)`).
 */
function writtenDetails(file: string): Array<{ line: number; code: string }> {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true)
  const found: Array<{ line: number; code: string }> = []
  /** The expression itself, without `as`, `satisfies`, `!` or parentheses around it. */
  const bare = (node: ts.Expression): ts.Expression =>
    ts.isAsExpression(node) ||
    ts.isSatisfiesExpression(node) ||
    ts.isNonNullExpression(node) ||
    ts.isParenthesizedExpression(node)
      ? bare(node.expression)
      : node
  const hasDetail = (expression: ts.Expression) => {
    const node = bare(expression)
    return (
      ts.isObjectLiteralExpression(node) &&
      node.properties.some(
        (p) =>
          (ts.isPropertyAssignment(p) || ts.isShorthandPropertyAssignment(p)) && p.name.getText(source) === 'detail'
      )
    )
  }
  const isText = (expression: ts.Expression) => {
    const node = bare(expression)
    return ts.isStringLiteralLike(node) || ts.isTemplateExpression(node) || ts.isBinaryExpression(node)
  }
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node)) {
      const args = node.arguments.map(bare)
      const at = args.findIndex(
        (a) => ts.isPropertyAccessExpression(a) && ts.isIdentifier(a.expression) && a.expression.text === 'CODE'
      )
      if (at >= 0) {
        const rest = args.slice(at + 1)
        // `(CODE.x, 'A sentence.')`: words right after the code; `report(CODE.x, 'attr')` names an attr (no spaces).
        if (rest.some(hasDetail) || (rest.length === 1 && isText(rest[0]!) && /\s/.test(rest[0]!.getText(source)))) {
          const code = (args[at] as ts.PropertyAccessExpression).name.text
          found.push({ line: source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1, code })
        }
      }
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

t.test("a call site writes a detail only for a code whose wording is '{detail}', listed with why", async (t) => {
  const free = new Set<string>(FREE_WORDINGS.map((f) => f.code))
  const wholeDetail = codes.filter((code) => ERROR_CODES[code].detail === '{detail}')
  t.same(
    wholeDetail.filter((code) => !free.has(code)),
    [],
    "every '{detail}' code is in FREE_WORDINGS with why; else give it a wording with named placeholders"
  )
  t.same(
    FREE_WORDINGS.filter((f) => ERROR_CODES[f.code].detail !== '{detail}').map((f) => f.code),
    [],
    "every FREE_WORDINGS code still has the wording '{detail}'"
  )
  t.ok(
    FREE_WORDINGS.every((f) => f.why.length > 0),
    'each with its reason'
  )
  const hits: string[] = []
  let calls = 0
  for (const path of [...sources('src'), ...sources('schemas')]) {
    const file = relative('.', path).split(sep).join('/')
    if (file === CATALOGUE) continue
    for (const { line, code } of writtenDetails(path)) {
      calls++
      if (!free.has(code)) hits.push(`${file}:${line} ${code}`)
    }
  }
  t.ok(calls > 10, `${calls} calls write their detail`)
  t.same(
    hits,
    [],
    "no call site writes the detail of a code whose wording is the catalogue's (fill in its placeholders)"
  )
})

/**
 * The codes the dashboard names that are its own, each with why: its ServiceError's code when no
 * service code applies. Every other code it names (compares an error's code with, asks hasCode
 * for, raises) is the catalogue's.
 */
const DASHBOARD_CODES: ReadonlyArray<{ code: string; why: string }> = [
  { code: 'unreachable', why: 'the request did not reach the service (fetch failed)' },
  { code: 'bad_response', why: 'an answer that is not JSON, or not an error body the service writes' },
  { code: 'error', why: 'an error without a code (a GraphQL error without extensions.code, or not a ServiceError)' }
]

/** The dashboard's modules: every `.js` file of src/dashboard (plain browser JavaScript). */
const dashboardModules = () =>
  readdirSync(join('src', 'dashboard'))
    .filter((name) => name.endsWith('.js'))
    .map((name) => join('src', 'dashboard', name))

/** Whether a node reads an error's code: `code`, `x.code` or `x?.code`. */
const isCode = (node: ts.Node) =>
  (ts.isIdentifier(node) && node.text === 'code') || (ts.isPropertyAccessExpression(node) && node.name.text === 'code')

/**
 * The string literals a dashboard module names as error codes: compared with a code (`===`,
 * `!==`), a code's fallback (`code ?? 'x'`, `cond ? x.code : 'x'`), the code of a ServiceError it
 * raises, or one asked of hasCode.
 */
function dashboardCodes(file: string): Array<{ line: number; code: string }> {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true, ts.ScriptKind.JS)
  const found: Array<{ line: number; code: string }> = []
  const add = (node: ts.Node | undefined) => {
    // '' is no code: what is shown when there is none (`bar?.code ?? ''`).
    if (node && ts.isStringLiteralLike(node) && node.text !== '') {
      found.push({ line: source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1, code: node.text })
    }
  }
  const visit = (node: ts.Node): void => {
    if (ts.isBinaryExpression(node)) {
      const op = node.operatorToken.kind
      const compares = [
        ts.SyntaxKind.EqualsEqualsEqualsToken,
        ts.SyntaxKind.ExclamationEqualsEqualsToken,
        ts.SyntaxKind.EqualsEqualsToken,
        ts.SyntaxKind.ExclamationEqualsToken
      ].includes(op)
      if (compares && isCode(node.left)) add(node.right)
      if (compares && isCode(node.right)) add(node.left)
      if (op === ts.SyntaxKind.QuestionQuestionToken && isCode(node.left)) add(node.right)
    }
    if (ts.isConditionalExpression(node)) {
      if (isCode(node.whenTrue)) add(node.whenFalse)
      if (isCode(node.whenFalse)) add(node.whenTrue)
    }
    if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'ServiceError') {
      add(node.arguments?.[0])
    }
    if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'hasCode') {
      for (const argument of node.arguments) {
        if (ts.isArrayLiteralExpression(argument)) argument.elements.forEach(add)
      }
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

t.test('every code the dashboard names is in the catalogue, or its own with why', async (t) => {
  const own = new Set(DASHBOARD_CODES.map((c) => c.code))
  const used = new Set<string>()
  const found: string[] = []
  for (const file of dashboardModules()) {
    for (const { line, code } of dashboardCodes(file)) {
      found.push(code)
      if (own.has(code)) used.add(code)
      else t.ok(code in ERROR_CODES, `${code} (${file}:${line}) is in schemas/error-codes.ts`)
    }
  }
  t.ok(new Set(found).size >= 10, `${new Set(found).size} codes named in ${dashboardModules().length} modules`)
  for (const { code, why } of DASHBOARD_CODES) {
    t.ok(used.has(code), `${code}: still named by the dashboard`)
    t.notOk(code in ERROR_CODES || code in CLIENT_CODES, `${code}: not a code of the catalogue`)
    t.ok(why.length > 0, `${code}: with its reason`)
  }
})

t.test("every code the migration client writes itself is the service's or its own", async (t) => {
  for (const file of sources(join('src', 'cli'))) {
    if (file.endsWith('generate.ts')) continue // the codes its invalid accounts are meant to get
    const text = readFileSync(file, 'utf8')
    for (const m of text.matchAll(/\bcode: (?:'|CODE\.|CLIENT_CODE\.)([a-z_]+)/g)) {
      t.ok(m[1]! in ERROR_CODES || m[1]! in CLIENT_CODES, `${m[1]} (${file}) is in ERROR_CODES or CLIENT_CODES`)
    }
  }
})
