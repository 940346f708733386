import t from 'tap'
import { createLimiter } from '../src/limiter.js'

t.test('at most max holders; the others get their turn in arrival order; a second release does nothing', async (t) => {
  const limiter = createLimiter(2)
  const order: number[] = []
  const a = await limiter.acquire()
  const b = await limiter.acquire()
  t.equal(limiter.active, 2)
  const later = [3, 4, 5].map((n) => limiter.acquire().then((release) => { order.push(n); return release }))
  await new Promise((resolve) => setImmediate(resolve))
  t.same(order, [], 'nobody beyond max')
  t.equal(limiter.waiting, 3)
  a()
  a()
  await new Promise((resolve) => setImmediate(resolve))
  t.same(order, [3], 'one release, one turn, however often it is called')
  t.equal(limiter.active, 2)
  b()
  await new Promise((resolve) => setImmediate(resolve))
  t.same(order, [3, 4])
  for (const release of await Promise.all(later.slice(0, 2))) release()
  const last = await later[2]!
  t.same(order, [3, 4, 5])
  t.equal(limiter.waiting, 0)
  last()
  t.equal(limiter.active, 0, 'every place given back')
})
