import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { chromium, type BrowserContext } from 'playwright-core'
import { projectRoot } from '../../src/paths.js'

/** Where browser tests leave screenshots (not committed). */
export const artifacts = join(projectRoot, 'test', 'artifacts')

/** `CHROMIUM_PATH`, else `chromium` on PATH (Debian's package; .ci/run installs it). */
export function findChromium(): string | undefined {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, 'chromium')
    try {
      accessSync(candidate, constants.X_OK)
      return candidate
    } catch {
      // not here
    }
  }
  return undefined
}

interface Teardown {
  teardown(fn: () => unknown): void
}

/**
 * Headless Chromium on a throwaway profile, closed at teardown, with every request to another
 * origin than `base` refused and recorded in `foreign` (a page must need nothing from a CDN).
 */
export async function launchBrowser(
  t: Teardown,
  executablePath: string,
  base: string,
  viewport = { width: 1280, height: 800 }
) {
  const profile = mkdtempSync(join(tmpdir(), 'amis-chromium-'))
  t.teardown(() => rmSync(profile, { recursive: true, force: true }))
  const browser: BrowserContext = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    viewport,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-quic',
      '--no-first-run',
      '--disable-component-update',
      '--disable-sync'
    ]
  })
  t.teardown(() => browser.close())
  const foreign: string[] = []
  await browser.route('**/*', (route) => {
    const url = route.request().url()
    if (url.startsWith(base + '/') || url.startsWith('data:')) return route.fallback()
    foreign.push(url)
    return route.abort()
  })
  return { browser, foreign }
}
