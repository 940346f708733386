import t from 'tap'
import { createByteBudget, createLimiter } from '../src/limiter.js'

const tick = () => new Promise((resolve) => setImmediate(resolve))

t.test('at most max holders; one key gets its turns in arrival order; a second release does nothing', async (t) => {
  const limiter = createLimiter(3)
  const order: number[] = []
  const a = await limiter.acquire('A')
  const b = await limiter.acquire('A')
  t.equal(limiter.active, 2)
  const later = [3, 4, 5].map((n) =>
    limiter.acquire('A').then((release) => {
      order.push(n)
      return release
    })
  )
  await tick()
  t.same(order, [], 'the last free turn is not for a key that holds some')
  t.equal(limiter.waiting, 3)
  a()
  a()
  await tick()
  t.same(order, [3], 'one release, one turn, however often it is called')
  t.equal(limiter.active, 2)
  b()
  await tick()
  t.same(order, [3, 4])
  for (const release of await Promise.all(later.slice(0, 2))) release()
  const last = await later[2]!
  t.same(order, [3, 4, 5])
  t.equal(limiter.waiting, 0)
  last()
  t.equal(limiter.active, 0, 'every place given back')
})

t.test('another key never waits for a key that holds all it may', async (t) => {
  const limiter = createLimiter(2)
  const a1 = await limiter.acquire('A')
  let a2Granted = false
  void limiter.acquire('A').then(() => {
    a2Granted = true
  })
  await tick()
  t.notOk(a2Granted, 'A holds one of two turns: the last is kept')
  const b = await limiter.acquire('B')
  t.pass('B gets the kept turn at once')
  t.equal(limiter.active, 2)
  b()
  await tick()
  t.notOk(a2Granted, 'A still may not take the last turn while holding one')
  a1()
  await tick()
  t.ok(a2Granted, 'A gets its next turn once its first is back')
})

t.test('freed turns go round the waiting keys', async (t) => {
  const limiter = createLimiter(2)
  const x = await limiter.acquire('X')
  const y = await limiter.acquire('Y')
  const order: string[] = []
  const wait = (key: string) =>
    limiter.acquire(key).then((release) => {
      order.push(key)
      return release
    })
  const waits = [wait('A'), wait('A'), wait('A'), wait('B'), wait('C')]
  await tick()
  x()
  await tick()
  y()
  await tick()
  t.same(order, ['A', 'B'], 'A, then B, not A twice')
  for (const release of await Promise.all(waits.slice(0, 1).concat(waits.slice(3, 4)))) release()
  await tick()
  t.same(order.slice(0, 3), ['A', 'B', 'C'], 'then C')
})

t.test('one turn in all: each key in turn', async (t) => {
  const limiter = createLimiter(1)
  const a = await limiter.acquire('A')
  let b = false
  void limiter.acquire('B').then(() => {
    b = true
  })
  await tick()
  t.notOk(b)
  a()
  await tick()
  t.ok(b, 'B gets the only turn when A gives it back')
})

t.test('byte budget: one key holds at most half; another is not delayed by it', async (t) => {
  const budget = createByteBudget(100)
  t.equal(budget.perKey, 50)
  const a1 = await budget.acquire('A', 30)
  let a2 = false
  void budget.acquire('A', 30).then((release) => {
    a2 = true
    return release
  })
  await tick()
  t.notOk(a2, 'A would hold 60 of 100: it waits')
  const b = await budget.acquire('B', 50)
  t.equal(budget.held, 80, 'B is served at once')
  b()
  t.notOk(a2, 'free bytes do not lift A past its half')
  a1()
  await tick()
  t.ok(a2, 'A goes on once its own bytes are back')
})

t.test("byte budget: a request larger than a key's half counts as the half", async (t) => {
  const budget = createByteBudget(100)
  const big = await budget.acquire('C', 1000)
  t.equal(budget.held, 50)
  big()
  t.equal(budget.held, 0)
})
