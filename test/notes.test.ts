import t from 'tap'
import { importedSetup, codes } from './helpers/accounts.js'

t.test('notes smoke', async (t) => {
  const { post } = await importedSetup(t)
  const res = await post('notes/create/', { notes: [{ body: 'hello' }, { body: 'hello' }, { document_paths: [{ document_path: '/a/b.pdf' }], created_at: '2026-11-01T10:00:00.500+01:00' }] })
  t.equal(res.statusCode, 201, res.body)
  console.log(res.body)
  const bad = await post('notes/create/', { notes: [{}, { body: 'x', unpin_at: '2026-01-01T00:00:00Z' }, { document_paths: [{ document_path: '../x' }] }] })
  console.log(bad.body, codes(bad))
})
