import t from 'tap'
import { notes } from '../drizzle/schema/index.js'
import { codes, exampleAccount, importedSetup } from './helpers/accounts.js'
import { tableCounts } from './helpers/database.js'
import { asOperator } from './helpers/graphql.js'

const PATH = 'notes/create/'
const WHOLE_SECONDS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/

t.test('notes', async (t) => {
  const { app, database, client, post } = await importedSetup(t)
  await asOperator(
    app,
    'mutation { updateImportSupplier(input: {code: "ACME_ENERGY", documentRoot: "acme/notes"}) { code } }'
  )
  const stored = () => database.db.select().from(notes).orderBy(notes.createdAt)

  t.test('created in order: bodies, documents, times to the second, full document locations', async (t) => {
    const res = await post(PATH, {
      notes: [
        { body: 'Customer asked about the move.' },
        {
          document_paths: [{ document_path: '/letters/welcome.pdf' }, { document_path: 'letters/2026/terms.pdf' }],
          created_at: '2026-11-01T10:00:00.750+01:00'
        },
        {
          body: 'Pinned until spring.',
          is_pinned: true,
          unpin_at: '2027-03-01T00:00:00Z',
          created_at: '2026-11-02T08:00:00Z'
        }
      ]
    })
    t.equal(res.statusCode, 201, res.body)
    const [first, second, third] = res.json()
    t.same([first.body, first.status], ['Customer asked about the move.', 'NOTE_CREATION_SUCCESS'])
    t.match(first.created_at, WHOLE_SECONDS)
    t.same(
      second,
      { created_at: '2026-11-01T09:00:00Z', body: null, status: 'NOTE_CREATION_SUCCESS' },
      'a document-only note echoes body null'
    )
    t.same(third, { created_at: '2026-11-02T08:00:00Z', body: 'Pinned until spring.', status: 'NOTE_CREATION_SUCCESS' })
    const rows = await stored()
    t.same(rows[1]!.documentLocations, [
      'migration-documents/acme/notes/letters/2026/terms.pdf',
      'migration-documents/acme/notes/letters/welcome.pdf'
    ])
    t.same([rows[2]!.isPinned, rows[2]!.unpinAt?.toISOString()], [true, '2027-03-01T00:00:00.000Z'])
    const summary = (await client.summary('EXT-000123')).json()
    t.equal(summary.counts.notes, 3)
    t.equal(summary.latest_event.type, 'POST_IMPORT_WRITE')
  })

  t.test(
    'duplicates: same body, same set of document paths, same time when given; inside one request too',
    async (t) => {
      const before = await tableCounts(database)
      const res = await post(PATH, {
        notes: [
          { body: 'Customer asked about the move.' },
          { document_paths: [{ document_path: 'letters/2026/terms.pdf' }, { document_path: 'letters/welcome.pdf' }] },
          {
            document_paths: [{ document_path: 'letters/welcome.pdf' }, { document_path: '/letters/2026/terms.pdf' }],
            created_at: '2026-11-01T09:00:00Z'
          },
          { body: 'Pinned until spring.', created_at: '2026-11-02T08:00:00.400Z' }
        ]
      })
      t.equal(res.statusCode, 201, res.body)
      t.same(
        res.json().map((n: any) => n.status),
        ['NOTE_ALREADY_EXISTS', 'NOTE_ALREADY_EXISTS', 'NOTE_ALREADY_EXISTS', 'NOTE_ALREADY_EXISTS']
      )
      t.same(
        res
          .json()
          .slice(1)
          .map((n: any) => n.created_at),
        ['2026-11-01T09:00:00Z', '2026-11-01T09:00:00Z', '2026-11-02T08:00:00Z'],
        "the stored note's time is echoed"
      )
      t.same(await tableCounts(database), before, 'a retry writes nothing, not even an event')

      const inOne = await post(PATH, { notes: [{ body: 'Twice in one go.' }, { body: 'Twice in one go.' }] })
      t.same(
        inOne.json().map((n: any) => n.status),
        ['NOTE_CREATION_SUCCESS', 'NOTE_ALREADY_EXISTS']
      )
      t.equal(inOne.json()[1].created_at, inOne.json()[0].created_at)

      const different = await post(PATH, {
        notes: [
          { body: 'Customer asked about the move.', created_at: '2020-01-01T00:00:00Z' },
          { body: 'Customer asked about the move.', document_paths: [{ document_path: 'letters/welcome.pdf' }] },
          { document_paths: [{ document_path: 'letters/welcome.pdf' }] }
        ]
      })
      t.same(
        different.json().map((n: any) => n.status),
        ['NOTE_CREATION_SUCCESS', 'NOTE_CREATION_SUCCESS', 'NOTE_CREATION_SUCCESS'],
        'another time, another set of documents, a subset of documents: new notes'
      )
    }
  )

  t.test('rules: body or documents, pinning, document paths; all problems in one body, nothing stored', async (t) => {
    const before = await tableCounts(database)
    const res = await post(PATH, {
      notes: [
        {},
        { body: 'x', unpin_at: '2027-01-01T00:00:00Z' },
        { body: 'y', is_pinned: true, created_at: '2026-11-02T08:00:00Z', unpin_at: '2026-11-01T00:00:00Z' },
        {
          document_paths: [
            '../secret',
            'a\\b',
            's3://bucket/key',
            'a//b',
            'a/\u0007b',
            'ok/file.pdf',
            'a/./b',
            '//lead'
          ].map((p) => ({ document_path: p }))
        }
      ]
    })
    t.equal(res.statusCode, 400)
    t.equal(res.json().code, 'invalid_request')
    t.same(codes(res), [
      ['note_body_or_document_path_not_found', 'notes.0'],
      ['unexpected_field', 'notes.1.unpin_at'],
      ['note_unpin_at_earlier_than_creation_date', 'notes.2.unpin_at'],
      ['invalid_document_path', 'notes.3.document_paths.0.document_path'],
      ['invalid_document_path', 'notes.3.document_paths.1.document_path'],
      ['invalid_document_path', 'notes.3.document_paths.2.document_path'],
      ['invalid_document_path', 'notes.3.document_paths.3.document_path'],
      ['invalid_document_path', 'notes.3.document_paths.4.document_path'],
      ['invalid_document_path', 'notes.3.document_paths.6.document_path'],
      ['invalid_document_path', 'notes.3.document_paths.7.document_path']
    ])
    t.same(await tableCounts(database), before)
  })

  t.test('schema limits', async (t) => {
    const cases: Array<[unknown, Array<[string, string]>]> = [
      [[], [['min_items', 'notes']]],
      [Array.from({ length: 501 }, (_, i) => ({ body: `n${i}` })), [['max_items', 'notes']]],
      [[{ body: 'x'.repeat(10001) }], [['max_length', 'notes.0.body']]],
      [
        [{ document_paths: Array.from({ length: 21 }, (_, i) => ({ document_path: `d${i}` })) }],
        [['max_items', 'notes.0.document_paths']]
      ],
      [[{ document_paths: [] }], [['min_items', 'notes.0.document_paths']]],
      [[{ body: 'x', created_at: '2026-11-02 08:00' }], [['invalid_datetime', 'notes.0.created_at']]],
      [[{ body: 'x', colour: 'red' }], [['unexpected_field', 'notes.0.colour']]],
      [
        [{ body: 'x', document_paths: [{ document_path: 'a'.repeat(1025) }] }],
        [['max_length', 'notes.0.document_paths.0.document_path']]
      ]
    ]
    for (const [value, expected] of cases) {
      const res = await post(PATH, { notes: value })
      t.equal(res.statusCode, 400)
      t.same(codes(res), expected, JSON.stringify(expected))
    }
    const blank = await post(PATH, { notes: [{ body: '   ', document_paths: null }] })
    t.same(
      codes(blank),
      [['note_body_or_document_path_not_found', 'notes.0']],
      'blank and null optional fields count as omitted'
    )
  })

  t.test('404 until created and for an unknown pair; 400 when the supplier is not Ongoing', async (t) => {
    t.equal((await client.stage(exampleAccount({ external_account_number: 'STAGED-ONLY' }))).statusCode, 201)
    const staged = await post(PATH, { external_account_number: 'STAGED-ONLY', notes: [{ body: 'x' }] })
    t.same([staged.statusCode, codes(staged)], [404, [['account_not_found', null]]])
    const unknown = await post(PATH, { external_account_number: 'NOPE', notes: [{ body: 'x' }] })
    t.same([unknown.statusCode, codes(unknown)], [404, [['import_process_does_not_exist', null]]])
    const schemaFirst = await post(PATH, { external_account_number: 'NOPE', notes: [] })
    t.same(
      [schemaFirst.statusCode, codes(schemaFirst)],
      [400, [['min_items', 'notes']]],
      'schema problems come before the 404'
    )
    await asOperator(app, 'mutation { updateImportSupplier(input: {code: "ACME_ENERGY", status: Complete}) { code } }')
    const closed = await post(PATH, { notes: [{ body: 'x' }] })
    await asOperator(app, 'mutation { updateImportSupplier(input: {code: "ACME_ENERGY", status: Ongoing}) { code } }')
    t.same([closed.statusCode, codes(closed)], [400, [['import_supplier_migration_not_ongoing', 'import_supplier']]])
  })
})
