import t from 'tap'
import { waitFor } from '../helpers/wait.js'

t.test('waitFor: the first value other than undefined, null or false', async (t) => {
  const answers: unknown[] = [undefined, null, false, 0, 'later']
  t.equal(await waitFor('an answer', () => answers.shift(), { intervalMs: 1 }), 0, '0 is a value')
  let calls = 0
  t.same(await waitFor('a row', async () => (++calls === 3 ? { id: 7 } : undefined), { intervalMs: 1 }), { id: 7 })
  t.equal(calls, 3, 'asked until it came')
})

t.test('waitFor: on timeout an error naming what was awaited and the last value seen', async (t) => {
  let n = 0
  await t.rejects(
    waitFor('the count reaches 1000', () => ++n >= 1000, { timeoutMs: 50, intervalMs: 5 }),
    /^timed out after 50 ms waiting until the count reaches 1000; last seen: false$/
  )
  await t.rejects(
    waitFor('the server listens', () => undefined, { timeoutMs: 20, intervalMs: 5, seen: () => 'no output yet' }),
    /waiting until the server listens; last seen: no output yet$/
  )
})

t.test('waitFor: an error from the check ends the wait, unless errors are ignored', async (t) => {
  let calls = 0
  const refused = () => {
    calls++
    throw new Error('connection refused')
  }
  await t.rejects(waitFor('a connection', refused, { timeoutMs: 1000 }), /^connection refused$/)
  t.equal(calls, 1, 'asked once')
  await t.rejects(
    waitFor('a connection', refused, { timeoutMs: 30, intervalMs: 5, ignoreErrors: true }),
    /waiting until a connection; last seen: Error: connection refused$/
  )
  t.ok(calls > 2, 'asked again after each error')
  let tries = 0
  const ready = await waitFor(
    'a connection',
    () => {
      if (++tries < 3) throw new Error('connection refused')
      return 'connected'
    },
    { intervalMs: 1, ignoreErrors: true }
  )
  t.equal(ready, 'connected')
})
