import t from 'tap'
import { describeUrl } from '../../src/db/index.js'

t.test('the database named in logs: hosts and database, never the user or password', async (t) => {
  t.equal(describeUrl('postgres://amis:secret@db.internal:6432/amis'), 'db.internal:6432/amis')
  t.equal(describeUrl('postgresql://db.internal/amis?sslmode=require'), 'db.internal:5432/amis')
  t.equal(
    describeUrl('postgres://amis:p%40ss@h1:5432,h2:5433,h3/amis?target_session_attrs=read-write'),
    'h1:5432,h2:5433,h3:5432/amis',
    'several hosts (a primary and its standbys), in the order tried'
  )
  t.equal(describeUrl('mysql://x/y'), 'an unparsable DATABASE_URL')
})
