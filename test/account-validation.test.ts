import t, { type Test } from 'tap'
import type { LightMyRequestResponse } from 'fastify'
import { eq } from 'drizzle-orm'
import { importProcesses } from '../drizzle/schema/index.js'
import { codes, daysFromToday, exampleAccount, importSetup } from './helpers/accounts.js'
import { account, bareLedger, CUR, SP, tx, withLedgers, type Account, type Expected } from './helpers/account-data.js'
import { asOperator, createTenant } from './helpers/graphql.js'

/**
 * Account data through validate (and stage): the wiring of the rules (each family's code and
 * attr through the endpoint, every problem at once, sorted and capped), the supplier checks and
 * what wins over schema problems. Every rule case by case: test/unit/account-rules.test.ts.
 */

t.test('account data validation', async (t) => {
  const { app, database, client } = await importSetup(t)

  /** Asserts a 400 account_failed_validation with exactly these `[code, attr]` entries, in order. */
  function expectErrors(t: Test, res: LightMyRequestResponse, expected: Expected, message = 'errors') {
    t.equal(res.statusCode, 400, `${message}: status`)
    t.equal(res.json().code, 'account_failed_validation', `${message}: code`)
    t.strictSame(codes(res), expected, message)
  }

  async function rejects(t: Test, body: unknown, expected: Expected, message?: string) {
    const res = await client.validate(body)
    expectErrors(t, res, expected, message)
    return res
  }

  async function accepts(t: Test, body: unknown, message = 'accepted'): Promise<Account> {
    const res = await client.validate(body)
    t.equal(res.statusCode, 200, res.statusCode === 200 ? message : `${message}: ${res.body}`)
    return res.json()
  }

  t.test('the example account validates and is returned normalised', async (t) => {
    const body = await accepts(t, exampleAccount())
    t.equal(body.transfer_balance, '6.26', 'a decimal string is returned in the format')
    t.equal(body.ledgers[0].last_statement_balance, '-40.50', 'a JSON number -40.5 becomes "-40.50"')
    t.equal(body.ledgers[0].ledger_balance, '6.26')
    t.equal(body.ledgers[0].historical_statement_transactions[0].amount, '90.50')
    t.equal(body.ledgers[0].historical_statement_transactions[1].amount, '50.00')
    const supplyCharge = body.ledgers[0].current_statement_transactions[0]
    t.equal(supplyCharge.amount, '53.24')
    t.strictSame(
      supplyCharge.line_items,
      [
        {
          rate_band: 'CONSUMPTION_STANDARD',
          start_date: '2026-10-01',
          end_date: '2026-10-31',
          number_of_units: '4.00',
          net_amount: '44.00',
          price_per_unit: '11.00',
          units: ['4.00', '8.00']
        }
      ],
      'every line item decimal, each units value included'
    )
    t.strictSame(supplyCharge.tax_items, [
      { amount: '9.24', tax_type: 'VAT', value_taxed: '44.00', rate: '0.21', unit_type: 'PROPORTION' }
    ])
    t.equal(body.ledgers[0].current_statement_transactions[1].amount, '100.00')
    t.equal(body.customers[0].landline, '+441174960123', 'landline in E.164, the billing country GB as default region')
    t.strictSame(
      body.billing_address,
      { street_address: '12 Harbour Row\nFlat 3', locality: 'Bristol', postal_code: 'BS1 5TY', country: 'GB' },
      'the blank administrative_area is omitted; newlines in street_address are kept'
    )
    t.equal(body.sales_channel, 'EVENTS', 'a value sent is not replaced by the default')
    t.strictSame(
      body.metadata,
      [{ key: 'legacy_crm_id', value: { crm: 'X-991', segment: 4 } }],
      'metadata values as sent'
    )
    t.strictSame(body.account_billing_options, { use_industry_billing: true })
    t.equal(body.external_account_number, 'EXT-000123')
  })

  t.test('each rule family answers its code and attr through the endpoint', async (t) => {
    const cases: Array<[string, Account, Expected]> = [
      [
        'a decimal',
        account((a) => {
          a.transfer_balance = '1.2.3'
        }),
        [['invalid_decimal', 'transfer_balance']]
      ],
      [
        'a required field',
        account((a) => {
          delete a.billing_address.country
        }),
        [['required', 'billing_address.country']]
      ],
      [
        'an unknown field',
        account((a) => {
          a.customers[0].zz = 1
        }),
        [['unexpected_field', 'customers.0.zz']]
      ],
      [
        'a choice',
        account((a) => {
          a.customers[0].title = 'Sir.'
        }),
        [['invalid_choice', 'customers.0.title']]
      ],
      [
        'a date',
        account((a) => {
          a.supply_addresses[0].customer_at_supply_address_from_date = '2023-02-30'
        }),
        [['invalid_date', 'supply_addresses.0.customer_at_supply_address_from_date']]
      ],
      [
        'billing options',
        account((a) => {
          a.account_billing_options = { use_industry_billing: false }
        }),
        [
          ['account_billing_options_period_data_required', 'account_billing_options.period_length'],
          ['account_billing_options_period_data_required', 'account_billing_options.period_start_day']
        ]
      ],
      [
        'an e-mail address',
        account((a) => {
          a.customers[0].email = 'test@mailbox.org'
        }),
        [['possible_test_email_address', 'customers.0.email']]
      ],
      [
        'a landline',
        account((a) => {
          a.customers[0].landline = 'abcde'
        }),
        [['invalid_phone_number', 'customers.0.landline']]
      ],
      [
        'a country',
        account((a) => {
          a.billing_address.country = 'XX'
        }),
        [['invalid_country', 'billing_address.country']]
      ],
      [
        'a postcode',
        account((a) => {
          a.billing_address.postal_code = 'NOT A CODE'
        }),
        [['invalid_postcode', 'billing_address.postal_code']]
      ],
      [
        'metadata',
        account((a) => {
          a.metadata = [
            { key: 'k', value: 1 },
            { key: 'k', value: 2 }
          ]
        }),
        [['metadata_has_duplicate_keys', 'metadata.1.key']]
      ],
      [
        'a balance',
        account((a) => {
          a.ledgers[0].ledger_balance = '6.25'
          a.transfer_balance = '6.25'
        }),
        [['balance_mismatch_on_ledger_balance', 'ledgers.0.ledger_balance']]
      ],
      [
        'a transaction id',
        withLedgers([bareLedger({ current_statement_transactions: [tx.credit('D-1', 1), tx.charge('D-1', 1)] })], 0),
        [['duplicate_transaction_ids', `${CUR}.1.transaction_id`]]
      ],
      [
        'an agreement',
        account((a) => {
          a.supply_addresses[0].supply_points[0].agreements[0].tariff_code = ' '
        }),
        [['blank', `${SP}.agreements.0.tariff_code`]]
      ],
      [
        'a transaction date',
        account((a) => {
          a.ledgers[0].current_statement_transactions[1].transaction_date = daysFromToday(1)
        }),
        [['transaction_in_future', `${CUR}.1.transaction_date`]]
      ]
    ]
    for (const [family, body, expected] of cases) await rejects(t, body, expected, family)
  })
  t.test('every problem in one response, sorted by attr then code', async (t) => {
    const a = exampleAccount()
    a.zzz = 1
    a.Z = 1
    a._x = 1
    a.billing_address.country = 'XX'
    a.billing_address.foo = 1
    a.customers[0].email = 'test@mailbox.org'
    a.customers[0].title = 'Sir.'
    const credits = Array.from({ length: 11 }, (_, i) => tx.credit(`S-${i}`, 1))
    Object.assign(credits[2]!, { amount: 'bad', zz: 1 })
    credits[10]!.amount = '12345678901.12345678901'
    a.ledgers[0].current_statement_transactions = credits
    a.metadata = [
      { key: 'k', value: 1 },
      { key: 'k', value: 2 }
    ]
    const agreements = Array.from({ length: 21 }, (_, k) => ({
      effective_from: `2023-01-${String(k + 1).padStart(2, '0')}`,
      tariff_code: 'T'
    }))
    agreements[20]!.tariff_code = ' '
    a.supply_addresses[0].supply_points[0].agreements = agreements
    a.transfer_balance = 'x'
    await rejects(t, a, [
      ['unexpected_field', 'Z'],
      ['unexpected_field', '_x'],
      ['invalid_country', 'billing_address.country'],
      ['unexpected_field', 'billing_address.foo'],
      ['possible_test_email_address', 'customers.0.email'],
      ['invalid_choice', 'customers.0.title'],
      ['invalid_decimal', `${CUR}.2.amount`],
      ['unexpected_field', `${CUR}.2.zz`],
      ['max_decimal_places', `${CUR}.10.amount`],
      ['max_digits', `${CUR}.10.amount`],
      ['metadata_has_duplicate_keys', 'metadata.1.key'],
      ['max_items', `${SP}.agreements`],
      ['blank', `${SP}.agreements.20.tariff_code`],
      ['invalid_decimal', 'transfer_balance'],
      ['unexpected_field', 'zzz']
    ])
  })

  t.test('at most 100 entries, the first 100 in sort order', async (t) => {
    const body = withLedgers(
      [
        bareLedger({
          current_statement_transactions: Array.from({ length: 120 }, (_, i) => tx.credit(`B-${i}`, 'bad'))
        })
      ],
      0,
      (a) => {
        a.billing_address.country = 'XX'
      }
    )
    const res = await client.validate(body)
    expectErrors(t, res, [
      ['invalid_country', 'billing_address.country'],
      ...Array.from({ length: 99 }, (_, i): [string, string] => ['invalid_decimal', `${CUR}.${i}.amount`])
    ])
    t.equal(res.json().errors.length, 100)
    for (const e of res.json().errors) t.type(e.detail, 'string')
  })

  t.test('unknown, foreign and paused suppliers are listed with every other problem', async (t) => {
    const problems = (supplier: string) =>
      account((a) => {
        a.import_supplier = supplier
        a.customers[0].email = 'test@mailbox.org'
        a.customers[0].zz = 1
        a.transfer_balance = '6.25'
      })
    const unknownExpected: Expected = [
      ['possible_test_email_address', 'customers.0.email'],
      ['unexpected_field', 'customers.0.zz'],
      ['does_not_exist', 'import_supplier'],
      ['ledger_balances_not_equal_to_transfer_balance', 'transfer_balance']
    ]
    const unknown = await rejects(t, problems('NO_SUCH'), unknownExpected, 'unknown supplier')
    expectErrors(t, await client.stage(problems('NO_SUCH')), unknownExpected, 'unknown supplier (stage)')
    await rejects(
      t,
      account((a) => {
        a.import_supplier = 'acme_energy'
      }),
      [['does_not_exist', 'import_supplier']],
      'codes are case-sensitive'
    )
    await rejects(
      t,
      account((a) => {
        a.import_supplier = 'ACME\u0000ENERGY'
      }),
      [['invalid', 'import_supplier']],
      'NUL is invalid, never a lookup'
    )

    await createTenant(app, 'Other', 'OTHER_POWER')
    const foreign = await rejects(t, problems('OTHER_POWER'), unknownExpected, "another organisation's supplier")
    expectErrors(t, await client.stage(problems('OTHER_POWER')), unknownExpected, 'foreign supplier (stage)')
    const strip = (body: Account) => ({ ...body, errors: body.errors.map((e: Account) => [e.code, e.attr]) })
    t.strictSame(strip(foreign.json()), strip(unknown.json()), 'nothing tells a foreign supplier from an unknown one')

    const setStatus = (status: string) =>
      asOperator(app, `mutation($c: String!) { updateImportSupplier(input: {code: $c, status: ${status}}) { code } }`, {
        c: 'ACME_ENERGY'
      })
    const paused = account((a) => {
      a.external_account_number = 'EXT-PAUSED'
      a.zz = 1
    })
    const notOngoing: Expected = [
      ['import_supplier_migration_not_ongoing', 'import_supplier'],
      ['unexpected_field', 'zz']
    ]
    try {
      await setStatus('Paused')
      await rejects(t, paused, notOngoing, 'paused (validate)')
      expectErrors(t, await client.stage(paused), notOngoing, 'paused (stage)')
      await rejects(
        t,
        account(),
        [['import_supplier_migration_not_ongoing', 'import_supplier']],
        'a clean account of a paused supplier'
      )
      await setStatus('Complete')
      await rejects(t, paused, notOngoing, 'complete')
    } finally {
      await setStatus('Ongoing')
    }
    await accepts(t, account(), 'Ongoing again')
  })

  t.test('an imported account is refused with its numbers, before schema problems', async (t) => {
    const external = 'EXT-IMPORTED'
    t.equal((await client.stage(exampleAccount({ external_account_number: external }))).statusCode, 201)
    const created = await client.create(external)
    t.equal(created.statusCode, 201, created.body)
    const serviceAccountNumber = created.json().service_account_number
    const broken = account((a) => {
      a.external_account_number = external
      a.transfer_balance = 'x'
      a.zz = 1
      delete a.customers
    })
    for (const [name, send] of [
      ['validate', client.validate],
      ['stage', client.stage]
    ] as const) {
      const res = await send(broken)
      t.equal(res.statusCode, 400, name)
      const body = res.json()
      t.equal(body.code, 'account_already_imported', name)
      t.strictSame(codes(res), [['account_already_imported', 'external_account_number']], name)
      t.equal(body.external_account_number, external, name)
      t.equal(body.service_account_number, serviceAccountNumber, name)
    }
    const setStatus = (status: string) =>
      asOperator(app, `mutation($c: String!) { updateImportSupplier(input: {code: $c, status: ${status}}) { code } }`, {
        c: 'ACME_ENERGY'
      })
    try {
      await setStatus('Paused')
      const res = await client.validate(broken)
      t.equal(res.json().code, 'account_already_imported', 'before the supplier status too')
    } finally {
      await setStatus('Ongoing')
    }
  })

  t.test('a skipped account is refused before schema problems', async (t) => {
    const skip = (external: string) =>
      asOperator(
        app,
        'mutation($s: String!, $e: String!) { skipImportProcess(input: {importSupplierCode: $s, externalAccountNumber: $e}) { state } }',
        { s: 'ACME_ENERGY', e: external }
      )
    t.equal((await client.stage(exampleAccount({ external_account_number: 'EXT-SKIPPED' }))).statusCode, 201)
    await skip('EXT-SKIPPED')
    await skip('EXT-NEVER-STAGED')
    for (const external of ['EXT-SKIPPED', 'EXT-NEVER-STAGED']) {
      const broken = account((a) => {
        a.external_account_number = external
        a.transfer_balance = 'x'
        a.zz = 1
      })
      expectErrors(t, await client.validate(broken), [['account_import_skipped', null]], `${external} (validate)`)
      expectErrors(t, await client.stage(broken), [['account_import_skipped', null]], `${external} (stage)`)
      expectErrors(
        t,
        await client.validate(exampleAccount({ external_account_number: external })),
        [['account_import_skipped', null]],
        `${external}, clean data`
      )
    }
  })

  t.test('stage runs the same checks and stores the normalised data', async (t) => {
    const broken = account((a) => {
      a.external_account_number = 'EXT-STAGE'
      a.customers[0].email = 'a@example.com'
      a.ledgers[0].ledger_balance = 1
    })
    const validated = await client.validate(broken)
    const staged = await client.stage(broken)
    expectErrors(t, staged, codes(validated), 'stage reports what validate reports')
    t.strictSame(codes(staged), [
      ['possible_test_email_address', 'customers.0.email'],
      ['balance_mismatch_on_ledger_balance', 'ledgers.0.ledger_balance'],
      ['ledger_balances_not_equal_to_transfer_balance', 'transfer_balance']
    ])
    const [before] = await database.db
      .select()
      .from(importProcesses)
      .where(eq(importProcesses.externalAccountNumber, 'EXT-STAGE'))
    t.equal(before, undefined, 'nothing staged')

    const good = account((a) => {
      a.external_account_number = 'EXT-STAGE'
      a.billing_address.postal_code = 'bs15ty'
      a.billing_address.country = 'gb'
      delete a.sales_channel
    })
    const normalised = await accepts(t, good)
    const res = await client.stage(good)
    t.equal(res.statusCode, 201, res.body)
    const [row] = await database.db
      .select()
      .from(importProcesses)
      .where(eq(importProcesses.externalAccountNumber, 'EXT-STAGE'))
    t.strictSame(row?.stagedData, normalised, 'the stored data is what validate returns')
    t.equal((row?.stagedData as Account).billing_address.postal_code, 'BS1 5TY')
    t.equal((row?.stagedData as Account).sales_channel, 'DIRECT')
  })
})
