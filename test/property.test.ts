import t, { type Test } from 'tap'
import fc from 'fast-check'
import type { LightMyRequestResponse } from 'fastify'
import { AccountData } from '../schemas/account.js'
import { compareAttr } from '../src/errors.js'
import { shapeProblem } from '../src/plugins/bodies.js'
import { importSetup, TEAM } from './helpers/accounts.js'
import { fromSchema, validAccount, type Account, type Schema } from './helpers/arbitraries.js'
import { mutation, serialise } from './helpers/mutations.js'

/**
 * Property-based tests of account input (validate and stage): accounts generated
 * from the schemas are accepted, every single broken field is reported at its attr, nothing
 * answers 500 or hangs, and validate and stage agree. A fixed seed and run count by default;
 * FUZZ_SEED and FUZZ_RUNS change them (`npm run fuzz`).
 */

/** `FUZZ_SEED=random` draws one (printed, so a failure can be replayed). */
const SEED =
  process.env.FUZZ_SEED === 'random'
    ? Math.floor(Math.random() * 2 ** 31)
    : process.env.FUZZ_SEED
      ? Number(process.env.FUZZ_SEED)
      : 42
const RUNS = process.env.FUZZ_RUNS ? Number(process.env.FUZZ_RUNS) : 100
/** A small body limit, so oversized mutations stay cheap: larger bodies must get 413. */
const BODY_LIMIT = 2 * 1024 * 1024
/** Longest any one request may take before it counts as a hang. */
const REQUEST_TIMEOUT_MS = 20_000

t.comment(`fast-check seed ${SEED}, ${RUNS} runs per property (replay: FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS})`)

const VALIDATE = '/v1/data-import/validate-account/'
const STAGE = '/v1/data-import/account-import-process/create-or-update/'

/** The first `n` characters of a text, for readable failure messages. */
const clip = (s: string, n = 600) => (s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s)

/** `[code, attr]` of each entry, as answered. */
const pairs = (res: LightMyRequestResponse) =>
  (res.json().errors as Array<{ code: string; attr: string | null }>).map((e) => `${e.code}@${e.attr}`)

/** Throws unless the body is the error shape, entries sorted by attr then code, at most 100. */
function assertErrorShape(res: LightMyRequestResponse, what: string): void {
  const body = res.json()
  const fail = (why: string) => {
    throw new Error(`${what}: ${why}: ${clip(res.body)}`)
  }
  if (typeof body.detail !== 'string' || typeof body.code !== 'string' || !Array.isArray(body.errors)) {
    fail('not the error shape')
  }
  if (body.errors.length > 100) fail('more than 100 entries')
  for (const e of body.errors) {
    if (
      typeof e.detail !== 'string' ||
      typeof e.code !== 'string' ||
      !(e.attr === null || typeof e.attr === 'string')
    ) {
      fail('an entry is not {detail, code, attr}')
    }
  }
  for (let i = 1; i < body.errors.length; i++) {
    const [p, q] = [body.errors[i - 1], body.errors[i]]
    if ((compareAttr(p.attr, q.attr) || (p.code < q.code ? -1 : p.code > q.code ? 1 : 0)) > 0) {
      fail('entries not sorted by attr, then code')
    }
  }
}

/** Runs a property with the seed and runs of this file; a failure reports its seed, path and (clipped) counterexample. */
async function check<T>(t: Test, name: string, property: fc.IAsyncProperty<T>, runs = RUNS): Promise<void> {
  const started = Date.now()
  const result = await fc.check(property, { seed: SEED, numRuns: runs, endOnFailure: runs > RUNS })
  if (result.failed) {
    t.fail(`${name}: ${clip(String(result.errorInstance ?? ''), 3000)}`, {
      seed: result.seed,
      path: result.counterexamplePath,
      counterexample: clip(JSON.stringify(result.counterexample), 3000)
    })
  } else {
    t.pass(`${name}: ${result.numRuns} runs in ${Date.now() - started} ms`)
  }
}

t.test('property-based account input', async (t) => {
  const { app, tenant } = await importSetup(t, { env: { BODY_LIMIT_BYTES: String(BODY_LIMIT) } })

  /** POSTs a JSON text; a request that does not answer in time, or answers 500, fails the property. */
  async function post(url: string, payload: string): Promise<LightMyRequestResponse> {
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer from ${url} within ${REQUEST_TIMEOUT_MS} ms`)),
        REQUEST_TIMEOUT_MS
      )
    })
    try {
      const res = await Promise.race([
        app.inject({
          method: 'POST',
          url,
          payload,
          headers: { authorization: `Token ${tenant.token}`, 'content-type': 'application/json' }
        }),
        timeout
      ])
      if (res.statusCode >= 500) throw new Error(`${url} answered ${res.statusCode}: ${clip(res.body)}`)
      return res
    } finally {
      clearTimeout(timer)
    }
  }

  /** Validate, then stage the same body: they must agree on the status class and the [code, attr] entries. */
  async function validateAndStage(payload: string) {
    const validated = await post(VALIDATE, payload)
    const staged = await post(STAGE, payload)
    const cls = (r: LightMyRequestResponse) => Math.floor(r.statusCode / 100)
    if (cls(validated) !== cls(staged)) {
      throw new Error(
        `validate ${validated.statusCode} but stage ${staged.statusCode}: ${clip(validated.body)} / ${clip(staged.body)}`
      )
    }
    if (validated.statusCode >= 400) {
      assertErrorShape(validated, 'validate')
      assertErrorShape(staged, 'stage')
      if (validated.statusCode !== staged.statusCode || pairs(validated).join() !== pairs(staged).join()) {
        throw new Error(`validate and stage disagree: ${clip(validated.body)} / ${clip(staged.body)}`)
      }
    }
    return { validated, staged }
  }

  await t.test(
    'valid accounts are accepted, staged and would be created; their normalised form validates to itself',
    async (t) => {
      await check(
        t,
        'valid accounts',
        fc.asyncProperty(validAccount(), async (account) => {
          const { validated, staged } = await validateAndStage(JSON.stringify(account))
          if (validated.statusCode !== 200) {
            throw new Error(`validate ${validated.statusCode}: ${clip(validated.body, 2000)}`)
          }
          if (staged.statusCode !== 201 && staged.statusCode !== 200) {
            throw new Error(`stage ${staged.statusCode}: ${clip(staged.body)}`)
          }
          // A dry-run create writes (and rolls back) every row: what the database refuses shows here.
          const created = await post(
            '/v1/data-import/account-import-process/process/',
            JSON.stringify({
              external_account_number: account.external_account_number,
              import_supplier_code: 'ACME_ENERGY',
              operations_team_name: TEAM,
              dry_run: true
            })
          )
          if (created.json().code !== 'dry_run_rolled_back') {
            throw new Error(`dry-run create ${created.statusCode}: ${clip(created.body, 2000)}`)
          }
          const again = await post(VALIDATE, validated.body)
          if (again.statusCode !== 200 || again.body !== validated.body) {
            throw new Error(`the normalised account does not validate to itself: ${clip(again.body, 2000)}`)
          }
        })
      )
    }
  )

  await t.test(
    'every broken field is a 400 at its attr (413 when oversized), the same from validate and stage',
    async (t) => {
      const arb = validAccount().chain((account) => mutation(account))
      await check(
        t,
        'mutations',
        fc.asyncProperty(arb, async (m) => {
          const payload = serialise(m)
          const { validated } = await validateAndStage(payload)
          const where = `${m.kind} at ${m.attr}`
          if (Buffer.byteLength(payload) > BODY_LIMIT) {
            if (validated.statusCode !== 413 || validated.json().code !== 'payload_too_large') {
              throw new Error(`${where}: oversized but ${validated.statusCode}`)
            }
            return
          }
          if (validated.statusCode !== 400) throw new Error(`${where}: ${validated.statusCode} ${clip(validated.body)}`)
          const body = validated.json()
          if (shapeProblem(Buffer.from(payload))) {
            // Nested deeper than the body may be: refused as a whole, before any field is judged.
            if (body.code !== 'invalid_request' || pairs(validated).join() !== 'invalid@null') {
              throw new Error(`${where}: too deep, but ${clip(validated.body)}`)
            }
            return
          }
          if (body.code !== 'account_failed_validation') throw new Error(`${where}: code ${body.code}`)
          if (!body.errors.some((e: { attr: string | null }) => e.attr === m.attr)) {
            throw new Error(`${where}: not reported there: ${clip(validated.body, 2000)}`)
          }
        })
      )
    }
  )

  await t.test('no input answers 500 or hangs; validate and stage agree', async (t) => {
    const schemaValid = (fromSchema(AccountData as Schema) as fc.Arbitrary<Account>).chain((a) =>
      fc.boolean().map((ours) => JSON.stringify(ours ? { ...a, import_supplier: 'ACME_ENERGY' } : a))
    )
    const anyJson = fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v))
    const notJson = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.constantFrom('', '{', '{"a":', '[1,]', 'NaN', '{"a":1}{', '\uFEFF{}', '{"__proto__":{"x":1}}')
    )
    const payload = fc.oneof(
      { weight: 3, arbitrary: schemaValid },
      { weight: 1, arbitrary: anyJson },
      { weight: 1, arbitrary: notJson }
    )
    await check(
      t,
      'any input',
      fc.asyncProperty(payload, async (text) => {
        const { validated, staged } = await validateAndStage(text)
        if (![200, 400, 413].includes(validated.statusCode)) {
          throw new Error(`validate ${validated.statusCode}: ${clip(validated.body)}`)
        }
        if (![200, 201, 400, 413].includes(staged.statusCode)) {
          throw new Error(`stage ${staged.statusCode}: ${clip(staged.body)}`)
        }
      })
    )
  })
})
