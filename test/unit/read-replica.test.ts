import t from 'tap'
import type { Db } from '../../src/db/index.js'
import { createReads, REPLICA_DOWN_MS, type Replica } from '../../src/db/replica.js'

/** Where a read goes and when it comes back to the replica, with stand-in databases and clock. */

const primary = { name: 'primary' } as unknown as Db
const replicaDb = { name: 'replica' } as unknown as Db
const nameOf = (db: Db) => (db as unknown as { name: string }).name
const driverError = (code: string) => Object.assign(new Error(code), { code })

function setup(ping: () => Promise<void> = async () => {}) {
  let clock = 1_000_000
  const lines: string[] = []
  const replica: Replica = { db: replicaDb, description: 'read replica at r:5432/d', ping, close: async () => {} }
  const reads = createReads(
    primary,
    replica,
    { warn: (_o, m) => lines.push(`warn ${m}`), info: (_o, m) => lines.push(`info ${m}`) },
    () => clock
  )
  return { reads, lines, tick: (ms: number) => (clock += ms) }
}

t.test('reads go to the replica; without one, to the primary', async (t) => {
  const { reads } = setup()
  t.equal(await reads.run(async (db) => nameOf(db)), 'replica')
  const alone = createReads(primary, undefined, { warn() {}, info() {} })
  t.equal(await alone.run(async (db) => nameOf(db)), 'primary')
  t.equal(await alone.check(100), 'none')
})

t.test('an unreachable replica: the read runs on the primary, the replica is left alone for a while', async (t) => {
  const { reads, lines, tick } = setup()
  const tried: string[] = []
  let replicaUp = false
  const read = async (db: Db) => {
    tried.push(nameOf(db))
    if (db === replicaDb && !replicaUp) throw driverError('ECONNREFUSED')
    return nameOf(db)
  }
  t.equal(await reads.run(read), 'primary')
  t.same(tried, ['replica', 'primary'])
  tried.length = 0
  tick(REPLICA_DOWN_MS - 1)
  t.equal(await reads.run(read), 'primary')
  t.same(tried, ['primary'], 'not tried again within the window')
  tried.length = 0
  tick(1)
  t.equal(await reads.run(read), 'primary')
  t.same(tried, ['replica', 'primary'], 'tried again once the window is over')
  t.equal(lines.filter((l) => l.startsWith('warn')).length, 1, 'logged once while down')
  tick(REPLICA_DOWN_MS)
  replicaUp = true
  t.equal(await reads.run(read), 'replica')
  t.match(lines.at(-1), /^info read replica at r:5432\/d answers again/)
})

t.test(
  'a recovery conflict reruns on the primary without marking the replica down; other errors are thrown',
  async (t) => {
    const { reads, lines } = setup()
    let conflict = true
    const read = async (db: Db) => {
      if (db === replicaDb && conflict) {
        conflict = false
        throw driverError('40001')
      }
      return nameOf(db)
    }
    t.equal(await reads.run(read), 'primary')
    t.equal(await reads.run(read), 'replica', 'the replica is used at once again')
    t.same(lines, [])
    await t.rejects(
      reads.run(async () => {
        throw driverError('22P02')
      }),
      { code: '22P02' }
    )
    t.equal(await reads.run(async (db) => nameOf(db)), 'replica', 'a wrong query does not mark the replica down')
  }
)

t.test('repository(make): built once per database, the one chosen is given', async (t) => {
  const { reads } = setup()
  const made: string[] = []
  const repos = reads.repository((db) => {
    made.push(nameOf(db))
    return { where: async () => nameOf(db) }
  })
  t.same(made, ['primary', 'replica'])
  t.equal(await repos.read((r) => r.where()), 'replica')
  t.same(made, ['primary', 'replica'], 'not built again per read')
})

t.test('check(): never throws; a replica that does not answer is marked down', async (t) => {
  let answers = false
  const { reads, lines } = setup(async () => {
    if (!answers) throw new Error('no answer within 100 ms')
  })
  t.equal(await reads.check(100), 'down')
  t.equal(await reads.run(async (db) => nameOf(db)), 'primary')
  t.equal(await reads.check(100), 'down')
  t.equal(lines.length, 1, 'logged once')
  answers = true
  t.equal(await reads.check(100), 'up')
  t.equal(await reads.run(async (db) => nameOf(db)), 'replica', 'back at once when a check finds it up')
})
