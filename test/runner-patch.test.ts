import t from 'tap'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

// patches/@tapjs+run+4.5.10.patch and @tapjs+core+4.6.0.patch: without coverage, tap starts test
// processes (and so the processes they start) without @tapjs/processinfo's module hooks, in their
// arguments or in NODE_OPTIONS: about 1 s of CPU per process.
const processinfo = /@tapjs[\\/]processinfo/
const coverageOff = process.env.TAP_DISABLE_COVERAGE === '1'

t.test('the installed tap runner carries the patch it was pinned for', async (t) => {
  const require = createRequire(import.meta.url)
  const tapDir = dirname(require.resolve('tap/package.json'))
  const runDir = dirname(createRequire(join(tapDir, 'package.json')).resolve('@tapjs/run/package.json'))
  t.equal((JSON.parse(readFileSync(join(tapDir, 'package.json'), 'utf8')) as { version: string }).version, '21.8.0')
  t.equal((JSON.parse(readFileSync(join(runDir, 'package.json'), 'utf8')) as { version: string }).version, '4.5.10')
  const coreDir = dirname(createRequire(join(runDir, 'package.json')).resolve('@tapjs/core/package.json'))
  t.equal((JSON.parse(readFileSync(join(coreDir, 'package.json'), 'utf8')) as { version: string }).version, '4.6.0')
  t.match(readFileSync(join(runDir, 'dist', 'esm', 'test-argv.js'), 'utf8'), 'amis: without coverage')
  for (const kind of ['esm', 'commonjs']) t.match(readFileSync(join(coreDir, 'dist', kind, 'spawn.js'), 'utf8'), 'amis: without coverage')
})

t.test(`this test process ${coverageOff ? 'does not load' : 'loads'} the coverage hooks (coverage ${coverageOff ? 'off' : 'on'})`, async (t) => {
  const own = `${process.execArgv.join(' ')} ${process.env.NODE_OPTIONS ?? ''}`
  const child = execFileSync(process.execPath, ['-e', 'process.stdout.write(process.env.NODE_OPTIONS ?? "")'], { encoding: 'utf8' })
  if (coverageOff) {
    t.notMatch(own, processinfo, 'not in the test process')
    t.notMatch(child, processinfo, 'not in a process it starts')
  } else {
    t.match(own, processinfo, 'coverage still records the test process')
    t.match(child, processinfo, 'and the processes it starts')
  }
})
