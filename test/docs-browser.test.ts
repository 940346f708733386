import t from 'tap'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { buildTestApp } from './helpers/app.js'
import { artifacts, findChromium, launchBrowser } from './helpers/browser.js'

/** The page's own global, inside functions Playwright runs in the browser. */
declare const document: any

t.test('/docs renders the endpoints in headless Chromium', async (t) => {
  const executablePath = findChromium()
  // Not a skip: CI installs Chromium, so a missing one is a broken setup.
  if (!executablePath) {
    t.fail("chromium not found: install Debian's chromium package or set CHROMIUM_PATH")
    return
  }

  const { app } = await buildTestApp(t, { env: { NODE_ENV: 'production' } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`

  const page0 = await fetch(`${base}/docs`)
  t.equal(page0.status, 200)
  t.match(page0.headers.get('content-security-policy'), /script-src 'self'/, 'the page has its Content-Security-Policy')
  t.ok(page0.headers.get('x-request-id'), "and the app's own headers")

  // Everything must come from this server: a request elsewhere (a CDN) is refused and reported.
  const { browser, foreign } = await launchBrowser(t, executablePath, base, { width: 1280, height: 900 })
  const problems: string[] = []
  const page = await browser.newPage()
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text())
  })
  page.on('pageerror', (err) => {
    problems.push(err.message)
  })

  const response = await page.goto(`${base}/docs`, { waitUntil: 'load' })
  t.equal(response?.status(), 200)
  // Swagger UI renders the operations in several passes: wait for as many as the document has.
  // A function, not a string: Playwright evaluates a string again on every poll, which the page's
  // Content-Security-Policy (no eval) refuses once the first poll found too few.
  const doc = (await (await fetch(`${base}/openapi.json`)).json()) as { paths: object; webhooks: object }
  // Swagger UI lists the webhooks (what the service posts to receivers) by their names, with the paths.
  const documented = [...Object.keys(doc.paths), ...Object.keys(doc.webhooks)]
  await page.waitForFunction((n) => document.querySelectorAll('.opblock-summary-path').length >= n, documented.length, {
    timeout: 30_000
  })
  await page.waitForSelector('.info .title', { timeout: 30_000 })

  const paths = (await page.locator('.opblock-summary-path').allTextContents()).map((text) =>
    text.replace(/\u200b/g, '').trim()
  )
  for (const path of [
    '/v1/data-import/validate-account',
    '/v1/data-import/account-import-process/process',
    '/v1/data-import/accounts/{supplier}/{external}',
    '/v1/data-import/transactions/create',
    '/graphql',
    '/metrics'
  ]) {
    t.ok(paths.includes(path), `lists ${path}`)
  }
  t.same([...new Set(paths)].sort(), documented.sort(), 'every documented path and webhook is listed')
  t.match(await page.locator('.info .title').textContent(), /Account Migration Import Service/)
  t.ok(await page.locator('button.authorize').isVisible(), 'offers to authorise with a token')
  t.match(await page.locator('.info').textContent(), /How to authenticate/, 'says how to get a token')
  t.notOk(await page.locator('.topbar').isVisible(), 'no "explore any URL" bar')
  t.notMatch(await page.locator('body').textContent(), /§/, 'no section numbers of a document the reader does not have')

  // Opening an operation shows a realistic body to start from.
  await page.locator('#operations-Account_import-validateAccount .opblock-summary').click()
  await page.waitForSelector(
    '#operations-Account_import-validateAccount .body-param__example, #operations-Account_import-validateAccount .microlight',
    { timeout: 30_000 }
  )
  t.match(
    await page.locator('#operations-Account_import-validateAccount').textContent(),
    /EXT-000123/,
    'the example account is shown'
  )

  mkdirSync(artifacts, { recursive: true })
  await page.screenshot({ path: join(artifacts, 'docs.png'), fullPage: true })
  await page.screenshot({ path: join(artifacts, 'docs-top.png') })

  t.same(foreign, [], 'nothing is fetched from another origin')
  t.same(problems, [], 'no console errors (a Content-Security-Policy violation would be one)')
})
