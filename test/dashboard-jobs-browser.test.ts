import t from 'tap'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'drizzle-orm'
import type { Page } from 'playwright-core'
import { exampleAccount, jobSettled, TEAM } from './helpers/accounts.js'
import { buildTestApp } from './helpers/app.js'
import { artifacts, findChromium, launchBrowser } from './helpers/browser.js'
import { asOperator, createTenant } from './helpers/graphql.js'

/**
 * The dashboard's import jobs in headless Chromium, as a job's window and its end show them: a
 * job waiting for its window shows when it starts, one whose window ended says why it was
 * cancelled, a finished one how long it took and its rate, and a job's lines that are not JSON
 * are listed under it with the parser's reason (they name no account, so nothing else shows them).
 */

t.setTimeout(180_000)

// The page's globals, for the functions run in it (this project's TypeScript has no DOM types).
declare const document: any, window: any

/** A time as the page shows it: its time of day, after its date when that is not today (a window may cross midnight). */
const when = String.raw`(?:\S+ \d{1,2}, )?\d{1,2}:\d{2}`

const line = (external: string) =>
  JSON.stringify({ account: exampleAccount({ import_supplier: 'W_ENERGY', external_account_number: external }) }) + '\n'
/** A date-time `seconds` from now, in UTC whole seconds. */
const fromNow = (seconds: number) =>
  new Date(Math.floor(Date.now() / 1000 + seconds) * 1000).toISOString().slice(0, 19) + 'Z'

t.test(
  "the dashboard shows a job's window, why it was cancelled, how long it took and its lines not JSON",
  async (t) => {
    const executablePath = findChromium()
    // Not a skip: CI installs Chromium, so a missing one is a broken setup.
    if (!executablePath) {
      t.fail("chromium not found: install Debian's chromium package or set CHROMIUM_PATH")
      return
    }
    const { app } = await buildTestApp(t, { env: { NODE_ENV: 'production' } })
    const w = await createTenant(app, 'Window Water', 'W_ENERGY')
    await asOperator(app, 'mutation($n: String!) { createOperationsTeam(input: {name: $n}) { id } }', { n: TEAM })
    const jobs = (path: string, method: 'GET' | 'POST' = 'GET', payload?: string) =>
      app.inject({
        method,
        url: `/v1/data-import/import-jobs/${path}`,
        headers: {
          authorization: `Bearer ${w.token}`,
          ...(payload === undefined ? {} : { 'content-type': 'application/x-ndjson' })
        },
        ...(payload === undefined ? {} : { payload })
      })
    const submit = async (text: string, query = '') => {
      const res = await jobs(
        `?import_supplier=W_ENERGY&operations_team_name=${encodeURIComponent(TEAM)}${query}`,
        'POST',
        text
      )
      if (res.statusCode !== 202) throw new Error(`submit: ${res.body}`)
      return res.json().id as string
    }

    // A job that ran to its end: 4 created, 2 lines not JSON, one JSON but no object, a blank one.
    const cut = '{"account": {"first_name": "Jane"'
    const finishedId = await submit(
      line('W-1') + 'not JSON\n' + line('W-2') + '\n' + cut + '\n' + '42\n' + line('W-3') + line('W-4')
    )
    await jobSettled(app, w.token, finishedId, { states: ['COMPLETED'], intervalMs: 100 })
    // It was started 12 seconds before it ended and waited for a window that opened 4 seconds later
    // (a run this small takes well under a second): it ran 8 seconds, its waiting no part of its rate.
    await app.db.execute(sql`update import_jobs set started_at = finished_at - interval '12 seconds',
      not_before = finished_at - interval '8 seconds' where id = ${finishedId}::uuid`)
    // A job whose window ended before it began a line: the service cancels it (window_ended).
    const endedId = await submit(line('W-5') + line('W-6'), `&not_before=${fromNow(3600)}&not_after=${fromNow(7200)}`)
    await app.db.execute(sql`update import_jobs set not_before = now() - interval '2 minutes',
      not_after = now() - interval '1 minute' where id = ${endedId}::uuid`)
    const ended = await jobSettled(app, w.token, endedId, { states: ['CANCELLED'], intervalMs: 100 })
    t.equal(ended.cancelled_reason, 'window_ended')
    // A job waiting for its window, an hour ahead.
    const notBefore = fromNow(3600)
    const notAfter = fromNow(3 * 3600)
    const waitingId = await submit(line('W-7'), `&not_before=${notBefore}&not_after=${notAfter}`)
    t.equal((await jobs(`${waitingId}/`)).json().state, 'QUEUED')

    // A job running (held by another server process) at 1 line/s with 90 lines left, its window ending in a minute.
    const runningId = await submit(
      Array.from({ length: 100 }, (_, i) => line(`W-R${i + 1}`)).join(''),
      `&not_before=${fromNow(3600)}`
    )
    await app.db.execute(sql`update import_jobs set state = 'RUNNING', not_before = now() - interval '20 seconds',
      not_after = now() + interval '1 minute', claimed_by = 'another-server', claimed_until = now() + interval '1 hour',
      done = 10, created = 10,
      progress = jsonb_build_array(jsonb_build_array((extract(epoch from now()) * 1000)::bigint - 10000, 0),
        jsonb_build_array((extract(epoch from now()) * 1000)::bigint, 10))
    where id = ${runningId}::uuid`)

    await app.listen({ port: 0, host: '127.0.0.1' })
    const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
    const { browser, foreign } = await launchBrowser(t, executablePath, base)
    const page: Page = await browser.newPage()
    const problems: string[] = []
    page.on('pageerror', (err) => problems.push(err.message))
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text())
    })
    await page.goto(`${base}/dashboard`)
    await page.locator('#api-key').fill(w.apiKey)
    await page.locator('#sign-in-button').click()
    await page.locator('#board').waitFor({ state: 'visible' })
    await page.locator('#jobs .job').nth(3).waitFor()
    const job = (id: string) => page.locator(`#jobs .job[data-key="${id}"]`)

    t.same(
      await page
        .locator('#jobs .job')
        .evaluateAll((items: any[]) => items.map((i) => [i.dataset.key, i.dataset.state])),
      [
        [runningId, 'RUNNING'],
        [waitingId, 'QUEUED'],
        [endedId, 'CANCELLED'],
        [finishedId, 'COMPLETED']
      ],
      'newest first'
    )

    // Running, its window ending before its ETA: said beside it.
    // (The rate falls as time passes: 10 lines over the seconds since the first sample.)
    t.match(await job(runningId).locator('.job-pace').textContent(), /^\d\.\d lines\/sETA \d+ min/)
    const ends = job(runningId).locator('.job-window-ends')
    t.match(await ends.textContent(), new RegExp(`^its window ends first, at ${when}`))
    t.equal(
      await ends.locator('time').getAttribute('datetime'),
      (await jobs(`${runningId}/`)).json().not_after,
      'at its not_after'
    )
    t.equal(await job(finishedId).locator('.job-window-ends').count(), 0)

    // Waiting for its window: when it starts (the page's own clock format, the exact time on hover), and the window.
    const waits = job(waitingId).locator('.job-waits')
    t.match(await waits.textContent(), new RegExp(`^scheduled: starts ${when}`))
    t.equal(await waits.locator('time').getAttribute('datetime'), notBefore)
    const shownWindow = job(waitingId).locator('.job-window')
    t.match(await shownWindow.textContent(), new RegExp(`^Window: from ${when}.*, no line begun from ${when}`))
    t.same(
      [await shownWindow.getAttribute('data-not-before'), await shownWindow.getAttribute('data-not-after')],
      [notBefore, notAfter]
    )
    t.equal(await job(waitingId).locator('[data-role="cancel"]').count(), 1, 'it can be cancelled while it waits')

    // Its window ended: why it was cancelled, and its lines not processed.
    t.equal(
      await job(endedId).locator('.job-reason').textContent(),
      'Cancelled: its window ended before every line had begun.'
    )
    t.equal(await job(endedId).locator('.job-reason').getAttribute('data-reason'), 'window_ended')
    t.equal(await job(endedId).locator('.job-figure[data-figure="notProcessed"]').textContent(), '2 not processed')
    t.match(await job(endedId).locator('.job-pace').textContent(), new RegExp(`^cancelled ${when}.* · no line ran$`))

    // Finished: how long it ran and its rate (its 8 lines over 8 seconds), from its window's opening.
    t.equal(await job(finishedId).locator('.job-took').textContent(), ' · took 8 s, 1.0 lines/s')
    t.equal(await job(finishedId).locator('.job-reason').count(), 0, 'a finished job has no reason')
    // Its lines that are not JSON, with the parser's reason; the one that is JSON but no object is not among them.
    t.same(
      await job(finishedId)
        .locator('.job-not-json li')
        .evaluateAll((items: any[]) => items.map((i) => [i.dataset.line, i.textContent])),
      [
        ['2', "Line 2 is not JSON: a value was expected at character 1, found 'n'."],
        ['5', `Line 5 is not JSON: it ends too soon: ',' or '}' was expected at character ${cut.length + 1}.`]
      ]
    )
    t.notMatch(await job(finishedId).textContent(), 'Jane', 'nothing of the line quoted')

    // Pictures, and nothing cramped: every row of a job within the window, at a desk and on a phone.
    mkdirSync(artifacts, { recursive: true })
    for (const width of [1400, 900, 390]) {
      await page.setViewportSize({ width, height: 900 })
      await sleep(200)
      await page.locator('#jobs-panel').screenshot({ path: join(artifacts, `dashboard-job-window-${width}.png`) })
      const overflow = await page.evaluate(() => document.scrollingElement.scrollWidth - window.innerWidth)
      t.ok(overflow <= 0, `nothing wider than ${width} px (${overflow})`)
      for (const id of [runningId, waitingId, endedId, finishedId]) {
        const why = await job(id).locator('.job-why').boundingBox()
        const item = await job(id).boundingBox()
        t.ok(
          why && item && why.width >= item.width - 1,
          `at ${width} px the window and reasons of ${id.slice(0, 8)} take the row's width`
        )
      }
    }
    t.same(problems, [], 'no error in the page')
    t.same(foreign, [], 'no request to another host')
  }
)
