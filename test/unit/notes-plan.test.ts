import t from 'tap'
import { planNotes, type Identity } from '../../src/modules/notes/service.js'
import { documentLocation } from '../../src/rules/documents.js'

/**
 * Notes planned against the account's stored notes, without a database (the endpoint and batches
 * share planNotes): which notes are new, which the account already has, and the rows stored.
 */

const account = { id: 'account-1' }
const NOW = new Date('2026-11-24T10:20:30.750Z')
const at = (text: string) => new Date(text)
const location = (path: string) => documentLocation('bucket', 'acme', path)

type Note = Parameters<typeof planNotes>[0]['notes'][number]

/** Plans `notes`, each with its (already checked and sorted) document locations, none by default. */
function plan(notes: Note[], stored: Identity[] = [], locations: string[][] = notes.map(() => [])) {
  return planNotes({ notes }, account, locations, stored, NOW)
}

t.test('a new note is stored and answered as created', async (t) => {
  const p = plan([
    {
      body: 'Paper bills until March.',
      created_at: '2026-09-12T09:30:00Z',
      is_pinned: true,
      unpin_at: '2027-03-31T00:00:00Z'
    }
  ])
  t.strictSame(p.results, [
    { created_at: '2026-09-12T09:30:00Z', body: 'Paper bills until March.', status: 'NOTE_CREATION_SUCCESS' }
  ])
  t.equal(p.rows.length, 1)
  t.match(p.rows[0], {
    accountId: 'account-1',
    body: 'Paper bills until March.',
    documentLocations: [],
    noteCreatedAt: at('2026-09-12T09:30:00Z'),
    isPinned: true,
    unpinAt: at('2027-03-31T00:00:00Z')
  })
  t.type(p.rows[0]!.id, 'string')
  t.strictSame(p.detail, { created: 1 })
})

t.test('without a time, the note is created now, to the second; not pinned unless asked', async (t) => {
  const p = plan([{ body: 'Called about a meter reading.' }])
  t.strictSame(p.rows[0]!.noteCreatedAt, at('2026-11-24T10:20:30Z'), 'milliseconds dropped')
  t.equal(p.results[0]!.created_at, '2026-11-24T10:20:30Z')
  t.equal(p.rows[0]!.isPinned, false)
  t.equal(p.rows[0]!.unpinAt, null)
})

t.test('a given time is kept to the second', async (t) => {
  const p = plan([{ body: 'A', created_at: '2026-09-12T09:30:00.999Z' }])
  t.strictSame(p.rows[0]!.noteCreatedAt, at('2026-09-12T09:30:00Z'))
})

t.test('a duplicate of a stored note: nothing stored, answered with the stored time', async (t) => {
  const stored: Identity[] = [{ body: 'A', locations: [], createdAt: at('2026-09-12T09:30:00Z') }]

  const untimed = plan([{ body: 'A' }], stored)
  t.strictSame(
    untimed.results,
    [{ created_at: '2026-09-12T09:30:00Z', body: 'A', status: 'NOTE_ALREADY_EXISTS' }],
    'without a time, the same body and locations match whenever it was created'
  )
  t.strictSame(untimed.rows, [])
  t.equal(untimed.detail, undefined, 'no write to record')

  t.equal(
    plan([{ body: 'A', created_at: '2026-09-12T09:30:00.400Z' }], stored).results[0]!.status,
    'NOTE_ALREADY_EXISTS',
    'the same time to the second'
  )
  const later = plan([{ body: 'A', created_at: '2026-09-12T09:30:01Z' }], stored)
  t.equal(later.results[0]!.status, 'NOTE_CREATION_SUCCESS', 'one second later is another note')
  t.equal(later.rows.length, 1)
  t.equal(plan([{ body: 'a' }], stored).results[0]!.status, 'NOTE_CREATION_SUCCESS', 'the body is compared exactly')
})

t.test('duplicates inside the request: the first is created, the repeats are answered as existing', async (t) => {
  const p = plan([{ body: 'A' }, { body: 'A' }, { body: 'B' }, { body: 'A', created_at: '2026-01-01T00:00:00Z' }])
  t.strictSame(
    p.results.map((r) => r.status),
    ['NOTE_CREATION_SUCCESS', 'NOTE_ALREADY_EXISTS', 'NOTE_CREATION_SUCCESS', 'NOTE_CREATION_SUCCESS']
  )
  t.equal(p.results[1]!.created_at, '2026-11-24T10:20:30Z', 'the repeat answers the time of the first')
  t.strictSame(
    p.rows.map((r) => r.body),
    ['A', 'B', 'A'],
    'the same body at another given time is another note'
  )
  t.strictSame(p.detail, { created: 3 })

  const timed = plan([{ body: 'A', created_at: '2026-01-01T00:00:00Z' }, { body: 'A' }])
  t.strictSame(
    timed.results.map((r) => r.status),
    ['NOTE_CREATION_SUCCESS', 'NOTE_ALREADY_EXISTS'],
    'an untimed repeat matches a timed note of the same request'
  )
})

t.test('document locations: stored with the note, and part of what makes it the same note', async (t) => {
  const letter = location('letters/welcome.pdf')
  const bill = location('bills/2026-10.pdf')
  t.equal(letter, 'bucket/acme/letters/welcome.pdf')

  const p = plan(
    [{ document_paths: [{ document_path: 'letters/welcome.pdf' }, { document_path: 'bills/2026-10.pdf' }] }],
    [],
    [[bill, letter]]
  )
  t.strictSame(p.rows[0]!.documentLocations, [bill, letter])
  t.equal(p.rows[0]!.body, null, 'a note of documents only has no body')
  t.equal(p.results[0]!.body, null)

  const stored: Identity[] = [{ body: 'A', locations: [bill, letter], createdAt: at('2026-09-12T09:30:00Z') }]
  t.equal(
    plan([{ body: 'A' }], stored, [[bill, letter]]).results[0]!.status,
    'NOTE_ALREADY_EXISTS',
    'the same body and locations'
  )
  t.equal(plan([{ body: 'A' }], stored, [[letter]]).results[0]!.status, 'NOTE_CREATION_SUCCESS', 'one location fewer')
  t.equal(
    plan([{ body: 'A' }], stored, [[bill, letter, location('x.pdf')]]).results[0]!.status,
    'NOTE_CREATION_SUCCESS',
    'one location more'
  )
  t.equal(plan([{ body: 'A' }], stored, [[]]).results[0]!.status, 'NOTE_CREATION_SUCCESS', 'no locations')
})
