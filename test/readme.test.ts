import t from 'tap'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { projectRoot } from '../src/paths.js'

/**
 * What the README's "Two commands" say beside the commands: the line `npm start` prints before it
 * compiles (its build, run with tsc's --showConfig so that nothing is compiled), and the settings
 * it names for another port.
 */

const readme = readFileSync(join(projectRoot, 'README.md'), 'utf8')
const section = readme.slice(readme.indexOf('## Two commands'), readme.indexOf('## Five minutes'))

t.test('the two commands are the two commands', async (t) => {
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? ''
  t.same(
    block
      .trim()
      .split('\n')
      .map((line) => line.replace(/\s+#.*$/, '')),
    ['npm ci && npm start', 'npm ci && npm test']
  )
})

t.test('npm start runs the build, which says what it does before compiling, as the README quotes it', async (t) => {
  const scripts = (
    JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>
    }
  ).scripts
  t.equal(scripts.prestart, 'npm run build -- --noCheck')
  const run = spawnSync('npm', ['run', '--silent', 'build', '--', '--noCheck', '--showConfig'], {
    cwd: projectRoot,
    encoding: 'utf8'
  })
  t.equal(run.status, 0, run.stderr)
  const [first, ...rest] = run.stdout.split('\n')
  t.match(first, /^Compiling the service \(about \d+ s[^)]*\)…$/, 'the first line, before the compiler')
  t.match(JSON.parse(rest.join('\n')), { compilerOptions: { outDir: './dist' } }, 'then tsc, on the build config')
  t.ok(section.replace(/\s+/g, ' ').includes(`\`${first}\``), `the README quotes it: ${first}`)
})

t.test('the settings named for another port are the service’s and the walk-through’s', async (t) => {
  const env = readFileSync(join(projectRoot, '.env.example'), 'utf8')
  const walkthrough = readFileSync(join(projectRoot, 'scripts', 'walkthrough.sh'), 'utf8')
  t.match(section, /`PORT=8080 npm start`/)
  t.match(env, /^PORT=3000$/m)
  t.match(env, /^HOST=127\.0\.0\.1$/m)
  t.match(readme, /`BASE_URL=http:\/\/127\.0\.0\.1:8080 OPERATOR_API_KEY=amo_… bash scripts\/walkthrough\.sh`/)
  t.match(walkthrough, /^BASE=\$\{BASE_URL:-http:\/\/127\.0\.0\.1:3000\}$/m)
})
