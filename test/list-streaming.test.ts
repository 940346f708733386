import t from 'tap'
import { createHash } from 'node:crypto'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { Writable } from 'node:stream'
import { eq, sql } from 'drizzle-orm'
import type { FastifyInstance } from 'fastify'
import { importProcesses, importSuppliers } from '../drizzle/schema/index.js'
import { LIST_CHUNK_ROWS, createImportsRepository } from '../src/modules/imports/repository.js'
import { jsonArrayStream } from '../src/json-stream.js'
import { buildTestApp } from './helpers/app.js'
import { asOperator, createTenant } from './helpers/graphql.js'
import { setTimeout as sleep } from 'node:timers/promises'

/**
 * Without `limit` a list is streamed as one JSON array, read in keyset chunks, with memory
 * that does not grow with its length; the 404 is still decided before streaming starts.
 */

const LISTS = ['all', 'pending', 'imported'] as const
type Row = typeof importProcesses.$inferInsert

/** Code point order (what `COLLATE "C"` gives): UTF-8 byte order, not JavaScript's UTF-16 order. */
const byCodePoint = (a: string, b: string) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))

/** A row as the lists answer it, in the service's key order. */
function listed(row: Row) {
  return {
    external_account_number: row.externalAccountNumber,
    service_account_number: row.serviceAccountNumber ?? null,
    account_created_at:
      row.accountCreatedAt instanceof Date ? row.accountCreatedAt.toISOString().slice(0, 19) + 'Z' : null
  }
}

const inList = (list: (typeof LISTS)[number], row: Row) =>
  list === 'all' || (list === 'pending' ? row.state === 'STAGED' : row.state === 'IMPORTED')

interface HttpAnswer {
  status: number
  headers: IncomingMessage['headers']
  body: string
  /** False when the connection closed before the whole response arrived. */
  complete: boolean
}

/** A GET over a new connection; `onData` sees each piece of the body as it arrives. */
function httpGet(
  url: string,
  token: string,
  onData?: (piece: string, res: IncomingMessage) => void
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { agent: false, headers: { authorization: `Token ${token}` } }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (piece: string) => {
        if (onData) onData(piece, res)
        else body += piece
      })
      res.on('error', () => {})
      res.on('close', () => resolve({ status: res.statusCode!, headers: res.headers, body, complete: res.complete }))
    })
    req.on('error', reject)
    req.end()
  })
}

async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  return `http://127.0.0.1:${address.port}`
}

t.test('jsonArrayStream: back-pressure, stopping and failures', async (t) => {
  /** Endless chunks of 1000 items (about 40 kB each), counting what was pulled. */
  function endless() {
    const seen = { pulled: 0, finished: false }
    async function* chunks() {
      try {
        for (;;) {
          seen.pulled++
          yield Array.from({ length: 1000 }, (_, i) => ({ n: seen.pulled * 1000 + i, text: 'x'.repeat(20) }))
        }
      } finally {
        seen.finished = true
      }
    }
    return { seen, chunks: chunks() }
  }

  t.test('a chunk is read only when the stream wants more', async (t) => {
    const { seen, chunks } = endless()
    const stream = jsonArrayStream(chunks, () => t.fail('no error expected'))
    // A consumer that takes one piece and never finishes writing it.
    const stuck = new Writable({ highWaterMark: 1024, write() {} })
    stream.pipe(stuck)
    await sleep(200)
    t.ok(seen.pulled >= 1, 'the first chunk was read')
    t.ok(seen.pulled <= 3, `at most a chunk or two ahead of a stuck consumer (pulled ${seen.pulled})`)
    stream.destroy()
    await sleep(50)
    t.equal(seen.finished, true, 'destroying the stream ends the generator')
    const after = seen.pulled
    await sleep(50)
    t.equal(seen.pulled, after, 'nothing more is read')
  })

  t.test('the pieces make one JSON array; no chunks make []', async (t) => {
    async function* three() {
      yield [{ a: 1 }, { a: '"2"' }]
      yield [{ a: null }]
    }
    let text = ''
    for await (const piece of jsonArrayStream(three(), () => t.fail('no error expected'))) text += piece
    t.equal(text, '[{"a":1},{"a":"\\"2\\""},{"a":null}]')
    async function* none() {}
    let empty = ''
    for await (const piece of jsonArrayStream(none(), () => t.fail('no error expected'))) empty += piece
    t.equal(empty, '[]')
  })

  t.test('a failure after the first chunk destroys the stream and is reported', async (t) => {
    async function* failing() {
      yield [{ a: 1 }]
      throw new Error('database went away')
    }
    const reported: unknown[] = []
    const stream = jsonArrayStream(failing(), (err) => reported.push(err))
    let text = ''
    const error = await new Promise<Error | undefined>((resolve) => {
      stream.on('data', (piece: Buffer) => {
        text += piece.toString()
      })
      stream.on('error', resolve)
      stream.on('end', () => resolve(undefined))
    })
    t.match(error?.message, 'database went away', 'the stream ends in an error, not an end')
    t.equal(text, '[{"a":1}', 'what was sent before stays a truncated array')
    t.equal(reported.length, 1, 'reported once')
    t.equal(stream.destroyed, true)
  })
})

t.test('streamed lists', async (t) => {
  const { app, database, logs } = await buildTestApp(t, { captureLogs: true })
  const acme = await createTenant(app, 'Acme', 'ACME_ENERGY')
  const other = await createTenant(app, 'Other', 'OTHER_POWER')
  for (const code of ['BIG', 'BAD_FIRST', 'BAD_LATER']) {
    await asOperator(
      app,
      'mutation($c: String!) { createImportSupplier(input: {code: $c, organisation: "Acme"}) { code } }',
      { c: code }
    )
  }
  const supplierId = async (code: string) =>
    (
      await database.db.select({ id: importSuppliers.id }).from(importSuppliers).where(eq(importSuppliers.code, code))
    )[0]!.id
  /** Multi-row inserts of 5,000 rows. */
  async function insert(rows: Row[]) {
    for (let i = 0; i < rows.length; i += 5000) {
      await database.db.insert(importProcesses).values(rows.slice(i, i + 5000))
    }
  }
  const get = (url: string, token = acme.token) =>
    app.inject({ method: 'GET', url, headers: { authorization: `Token ${token}` } })
  const url = await listen(app)

  // 2,600 processes over three chunks of 1,000, with keys that JavaScript and code point order sort differently.
  const acmeId = await supplierId('ACME_ENERGY')
  const prefixes = ['A-', 'a-', '_', 'Z', 'é', '\uFF5A', '\u{1F600}', '0', 'a b/', 'B"q\\']
  const created = new Date('2026-11-20T10:11:12.345Z')
  const rows: Row[] = Array.from({ length: 2600 }, (_, i) => {
    const externalAccountNumber = `${prefixes[i % prefixes.length]}${String(i).padStart(5, '0')}`
    const state = (['STAGED', 'IMPORTED', 'SKIPPED'] as const)[i % 3]!
    return state === 'IMPORTED'
      ? {
          supplierId: acmeId,
          externalAccountNumber,
          state,
          serviceAccountNumber: `A-${(0x10000000 + i).toString(16).toUpperCase()}`,
          accountCreatedAt: created
        }
      : { supplierId: acmeId, externalAccountNumber, state, serviceAccountNumber: null, accountCreatedAt: null }
  })
  await insert(rows)
  const sorted = [...rows].sort((a, b) => byCodePoint(a.externalAccountNumber, b.externalAccountNumber))

  t.test('100,000 rows stream whole, read at the pace of the consumer', async (t) => {
    // Made by the database in batches of 5,000 (no JavaScript garbage left to blur the baseline).
    const big = await supplierId('BIG')
    const total = 100_000
    for (let from = 0; from < total; from += 5000) {
      await database.db
        .execute(sql`insert into import_processes (supplier_id, external_account_number, state, service_account_number, account_created_at)
        select ${big}::uuid, 'M-' || lpad(n::text, 6, '0'),
          (case when n % 10 = 0 then 'IMPORTED' else 'STAGED' end)::import_process_state,
          case when n % 10 = 0 then 'A-' || upper(to_hex(${0x20000000}::int + n)) end,
          case when n % 10 = 0 then ${created.toISOString()}::timestamptz end
        from generate_series(${from}::int, ${from + 4999}::int) as n`)
    }

    const gc = (globalThis as { gc?: () => void }).gc
    gc?.()
    const baseline = process.memoryUsage().heapUsed
    let peak = baseline
    const sample = () => {
      peak = Math.max(peak, process.memoryUsage().heapUsed)
    }
    const sampler = setInterval(sample, 5)
    const received = createHash('sha256')
    let bytes = 0
    let rowsSeen = 0
    const started = Date.now()
    const res = await httpGet(`${url}/v1/data-import/all-account-import-processes/BIG/`, acme.token, (piece) => {
      received.update(piece)
      bytes += piece.length
      for (let i = piece.indexOf('}'); i !== -1; i = piece.indexOf('}', i + 1)) rowsSeen++
      sample()
    })
    clearInterval(sampler)
    const growthMb = (peak - baseline) / 1024 / 1024
    t.comment(
      `100,000 rows, ${(bytes / 1024 / 1024).toFixed(1)} MB of JSON in ${Date.now() - started} ms; ` +
        `heap growth ${growthMb.toFixed(1)} MB (global.gc ${gc ? 'used' : 'not available'})`
    )
    t.equal(res.status, 200)
    t.equal(res.complete, true)
    t.equal(rowsSeen, total, 'every row arrived')
    const expected = createHash('sha256')
    for (let n = 0; n < total; n++) {
      const externalAccountNumber = `M-${String(n).padStart(6, '0')}`
      expected.update(
        (n === 0 ? '[' : ',') +
          JSON.stringify(
            listed(
              n % 10 === 0
                ? {
                    supplierId: big,
                    externalAccountNumber,
                    state: 'IMPORTED',
                    serviceAccountNumber: `A-${(0x20000000 + n).toString(16).toUpperCase()}`,
                    accountCreatedAt: created
                  }
                : { supplierId: big, externalAccountNumber, state: 'STAGED' }
            )
          )
      )
    }
    t.equal(received.digest('hex'), expected.update(']').digest('hex'), 'byte for byte the expected array')

    // Flat memory, proven without timing or heap figures (the bench measures those in its `all- list` scenario):
    // the 100,000 rows are read from the database only as fast as the consumer takes them.
    let pulled = 0
    async function* counted() {
      for await (const chunk of createImportsRepository(database.db).processChunks(big, 'all')) {
        pulled++
        yield chunk
      }
    }
    const stream = jsonArrayStream(counted(), () => t.fail('no error expected'))
    stream.pipe(new Writable({ highWaterMark: 1024, write() {} }))
    // `pulled` is counted by the stream's callbacks while this waits.
    // eslint-disable-next-line no-unmodified-loop-condition
    for (let waited = 0; pulled === 0 && waited < 10_000; waited += 20) await sleep(20)
    await sleep(300)
    t.ok(pulled >= 1 && pulled <= 3, `a stuck consumer: ${pulled} of ${total / LIST_CHUNK_ROWS} chunks read`)
    stream.destroy()
  })

  t.test('a client that leaves mid-stream: the server stops reading and carries on', async (t) => {
    const errorsLogged = () =>
      logs()
        .split('\n')
        .filter((line) => line.includes('"level":50')).length
    const errorsBefore = errorsLogged()
    // Counts the queries the app builds (test-only spy on the shared Drizzle handle).
    let selects = 0
    const select = database.db.select
    database.db.select = function countedSelect(this: unknown, ...args: unknown[]) {
      selects++
      return (select as (...a: unknown[]) => unknown).apply(this, args)
    } as typeof select
    t.teardown(() => {
      database.db.select = select
    })

    let pieces = 0
    const left = await new Promise<boolean>((resolve) => {
      const req = httpRequest(
        `${url}/v1/data-import/all-account-import-processes/BIG/`,
        {
          agent: false,
          headers: { authorization: `Token ${acme.token}`, 'x-request-id': 'leaving-client' }
        },
        (res) => {
          res.on('data', () => {
            pieces++
            if (pieces === 1) req.destroy()
          })
          res.on('error', () => {})
          res.on('close', () => resolve(res.complete))
        }
      )
      req.on('error', () => {})
      req.end()
    })
    t.equal(left, false, 'the client left before the end')
    await sleep(100)
    const readSoFar = selects
    t.ok(readSoFar < 20, `only the first chunks of 100 were read (${readSoFar} queries)`)
    await sleep(300)
    t.equal(selects, readSoFar, 'no chunk is read after the client left')
    t.match(logs(), /"reqId":"leaving-client"[^\n]*stream closed prematurely/, 'the server saw the client leave')

    const next = await httpGet(`${url}/v1/data-import/pending-account-import-processes/ACME_ENERGY/`, acme.token)
    t.equal(next.status, 200, 'the next request is answered')
    t.equal(JSON.parse(next.body).length, rows.filter((row) => row.state === 'STAGED').length)
    t.equal(errorsLogged(), errorsBefore, 'no error logged for the departed client')
  })

  t.test('the unpaged lists hold every row in code point order, exactly as the pages joined', async (t) => {
    for (const list of LISTS) {
      const path = `/v1/data-import/${list}-account-import-processes/ACME_ENERGY/`
      const whole = await get(path)
      t.equal(whole.statusCode, 200, list)
      t.equal(whole.headers['content-type'], 'application/json; charset=utf-8', list)
      const expected = sorted.filter((row) => inList(list, row)).map(listed)
      t.ok(expected.length > 860, `${list}: ${expected.length} rows`)
      t.same(whole.json(), expected, `${list}: every row, in code point order, each as the list serialises it`)

      const pages: unknown[] = []
      let next: string | undefined = `${path}?limit=1000`
      while (next) {
        const page = await get(next)
        t.equal(page.statusCode, 200)
        pages.push(...page.json())
        next = /^<([^>]+)>; rel="next"$/.exec(String(page.headers.link ?? ''))?.[1]
      }
      t.equal(whole.body, JSON.stringify(pages), `${list}: byte for byte the pages joined`)
    }
    t.equal(JSON.parse((await get('/v1/data-import/all-account-import-processes/ACME_ENERGY/')).body).length, 2600)
  })

  t.test('`after` without `limit` streams the rest of the list', async (t) => {
    const after = sorted[1499]!.externalAccountNumber
    const res = await get(
      `/v1/data-import/all-account-import-processes/ACME_ENERGY/?after=${encodeURIComponent(after)}`
    )
    t.equal(res.statusCode, 200)
    t.same(res.json(), sorted.slice(1500).map(listed))
  })

  t.test('over HTTP the body is chunked', async (t) => {
    const res = await httpGet(`${url}/v1/data-import/all-account-import-processes/ACME_ENERGY/`, acme.token)
    t.equal(res.status, 200)
    t.equal(res.headers['transfer-encoding'], 'chunked')
    t.equal(res.headers['content-length'], undefined)
    t.equal(res.complete, true)
    t.equal(JSON.parse(res.body).length, 2600)
    const empty = await httpGet(`${url}/v1/data-import/imported-account-import-processes/OTHER_POWER/`, other.token)
    t.equal(empty.body, '[]', 'an empty list is []')
  })

  t.test('an unknown or foreign supplier is still a plain 404', async (t) => {
    for (const supplier of ['NO_SUCH', 'OTHER_POWER']) {
      const res = await httpGet(`${url}/v1/data-import/all-account-import-processes/${supplier}/`, acme.token)
      t.equal(res.status, 404, supplier)
      t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
      t.equal(res.headers['transfer-encoding'], undefined, 'a whole body, not a stream')
      t.equal(res.headers['content-length'], String(Buffer.byteLength(res.body)))
      t.same(
        JSON.parse(res.body).errors.map((e: any) => [e.code, e.attr]),
        [['import_process_does_not_exist', null]]
      )
    }
    const theirs = await get('/v1/data-import/all-account-import-processes/OTHER_POWER/', other.token)
    t.same(theirs.json(), [], 'the other organisation streams its own empty list')
  })

  t.test('a failure before the first byte is a normal 500; after it, a cut body and a log line', async (t) => {
    // A timestamp no Date can hold makes a row fail to serialise: at a chosen place, on both drivers.
    const poison = (supplier: string, serviceAccountNumber: string): Row => ({
      supplierId: supplier,
      externalAccountNumber: 'P-1',
      state: 'IMPORTED',
      serviceAccountNumber,
      accountCreatedAt: sql`'infinity'` as never
    })
    await insert([poison(await supplierId('BAD_FIRST'), 'A-BAD1')])
    const early = await httpGet(`${url}/v1/data-import/imported-account-import-processes/BAD_FIRST/`, acme.token)
    t.equal(early.status, 500)
    t.equal(JSON.parse(early.body).code, 'server_error')
    t.equal(early.headers['transfer-encoding'], undefined)

    const later = await supplierId('BAD_LATER')
    await insert([
      ...Array.from({ length: 1500 }, (_, i): Row => ({
        supplierId: later,
        externalAccountNumber: `G-${String(i).padStart(4, '0')}`,
        state: 'STAGED'
      })),
      poison(later, 'A-BAD2')
    ])
    const cut = await httpGet(`${url}/v1/data-import/all-account-import-processes/BAD_LATER/`, acme.token)
    t.equal(cut.status, 200, 'the status was already sent')
    t.equal(cut.complete, false, 'the connection closed before the end of the body')
    t.ok(cut.body.startsWith('[{"external_account_number":"G-0000"'), 'the first chunk arrived')
    t.throws(() => JSON.parse(cut.body), 'the body is not a whole array')
    t.match(logs(), /list stream failed after the response started/)
    t.equal(
      (await get('/v1/data-import/all-account-import-processes/ACME_ENERGY/?limit=1')).statusCode,
      200,
      'the server carries on'
    )
  })
})
