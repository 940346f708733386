import t from 'tap'
import {
  chunkSizer,
  OTHERS_WINDOW_MS,
  othersActivity,
  PGLITE_ALONE_MS,
  PGLITE_SHARED_MS,
  POSTGRES_CHUNK_ACCOUNTS
} from '../../src/modules/batches/chunks.js'

t.test('PostgreSQL: a fixed number of accounts per transaction, whatever they cost', async (t) => {
  const sizer = chunkSizer('postgres', () => true)
  t.equal(sizer.next(), POSTGRES_CHUNK_ACCOUNTS)
  sizer.held(100, 5_000)
  t.equal(sizer.next(), POSTGRES_CHUNK_ACCOUNTS)
})

t.test('PGlite: transactions sized to hold the one session about the target time', async (t) => {
  let others = true
  const sizer = chunkSizer('pglite', () => others)
  const first = sizer.next()
  t.ok(first >= 2 && first <= 25, `a small first chunk (${first})`)

  // Slow accounts (5 ms each): few per transaction.
  for (let i = 0; i < 20; i++) sizer.held(sizer.next(), sizer.next() * 5)
  t.equal(sizer.next(), PGLITE_SHARED_MS / 5, 'others are coming in: the shorter target')
  others = false
  t.equal(sizer.next(), PGLITE_ALONE_MS / 5, 'nobody else: the longer one')
  others = true

  // Fast accounts (0.5 ms each): more per transaction, the cost per account smoothed over several.
  sizer.held(sizer.next(), sizer.next() * 0.5)
  const after = sizer.next()
  t.ok(after > PGLITE_SHARED_MS / 5 && after < PGLITE_SHARED_MS / 0.5, `grows gradually (${after})`)
  for (let i = 0; i < 30; i++) sizer.held(sizer.next(), sizer.next() * 0.5)
  t.equal(sizer.next(), PGLITE_SHARED_MS / 0.5)

  // Bounds: never fewer than 2 nor more than 100; nonsense measurements are ignored.
  for (let i = 0; i < 30; i++) sizer.held(sizer.next(), 10_000)
  t.equal(sizer.next(), 2)
  for (let i = 0; i < 60; i++) sizer.held(sizer.next(), 0)
  t.equal(sizer.next(), 100)
  sizer.held(0, 50)
  sizer.held(10, Number.NaN)
  t.equal(sizer.next(), 100)
})

t.test('others are active for a while after their last request', async (t) => {
  let now = 1_000_000
  const activity = othersActivity(() => now)
  t.notOk(activity.recent(), 'nobody yet')
  activity.mark()
  now += OTHERS_WINDOW_MS - 1
  t.ok(activity.recent())
  now += 1
  t.notOk(activity.recent())
})
