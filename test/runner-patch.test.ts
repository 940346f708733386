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

/** The folder and version of `name` as `from` (a package.json) resolves it. */
function installed(name: string, from: string): { dir: string; version: string } {
  const file = createRequire(from).resolve(`${name}/package.json`)
  return { dir: dirname(file), version: (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version }
}

t.test('the installed tap runner carries the patch it was pinned for', async (t) => {
  const tap = installed('tap', import.meta.url)
  const run = installed('@tapjs/run', join(tap.dir, 'package.json'))
  const core = installed('@tapjs/core', join(run.dir, 'package.json'))
  t.equal(tap.version, '21.8.0')
  t.equal(run.version, '4.5.10')
  t.equal(core.version, '4.6.0')
  t.match(readFileSync(join(run.dir, 'dist', 'esm', 'test-argv.js'), 'utf8'), 'amis: without coverage')
  for (const kind of ['esm', 'commonjs']) {
    t.match(readFileSync(join(core.dir, 'dist', kind, 'spawn.js'), 'utf8'), 'amis: without coverage')
  }
})

t.test(
  `this test process ${coverageOff ? 'does not load' : 'loads'} the coverage hooks (coverage ${coverageOff ? 'off' : 'on'})`,
  async (t) => {
    const own = `${process.execArgv.join(' ')} ${process.env.NODE_OPTIONS ?? ''}`
    const child = execFileSync(process.execPath, ['-e', 'process.stdout.write(process.env.NODE_OPTIONS ?? "")'], {
      encoding: 'utf8'
    })
    if (coverageOff) {
      t.notMatch(own, processinfo, 'not in the test process')
      t.notMatch(child, processinfo, 'not in a process it starts')
    } else {
      t.match(own, processinfo, 'coverage still records the test process')
      t.match(child, processinfo, 'and the processes it starts')
    }
  }
)
