import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * A new empty folder of the system's temporary folder, removed after the test. Not tap's
 * `t.testdir()`: its folder is named after the test, so the two halves of CI (the same files on
 * PGlite and on PostgreSQL, side by side in one checkout) would share it and see each other's
 * reports.
 */
export function tempDir(t: { teardown(fn: () => unknown): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'amis-test-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}
