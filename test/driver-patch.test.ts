import t from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { DRIVER_PATCH_MARKS, driverConnectionFile, driverPatchProblem } from '../src/db/driver-check.js'
import { tempDir } from './helpers/temp-dir.js'

t.test('the installed postgres driver carries the patch (patches/postgres+3.4.9.patch)', async (t) => {
  t.equal(driverPatchProblem(), undefined)
  for (const mark of DRIVER_PATCH_MARKS) t.match(readFileSync(driverConnectionFile(), 'utf8'), mark)
  const pkg = JSON.parse(readFileSync(join(driverConnectionFile(), '..', '..', 'package.json'), 'utf8')) as {
    version: string
  }
  t.equal(pkg.version, '3.4.9', 'the exact version the patch was made for')
})

t.test('an unpatched driver (either change missing) is named in one line that says what to do', async (t) => {
  const dir = tempDir(t)
  for (const mark of DRIVER_PATCH_MARKS) {
    const file = join(dir, 'connection.js')
    writeFileSync(file, readFileSync(driverConnectionFile(), 'utf8').replaceAll(mark, ''))
    const problem = driverPatchProblem(file)
    t.match(problem, /not patched.*npx patch-package/, mark)
    t.notMatch(problem, /\n/)
  }
  t.match(driverPatchProblem(join(dir, 'missing.js')), /cannot be read/)
})
