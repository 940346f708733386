// `npm test`: compiles the project once into a folder of this run's own (TypeScript's emit without
// its type check: `npm run typecheck` checks), then runs tap on the compiled test files, so that no
// test process and no server it starts loads TypeScript through a loader (about 1.5 s of CPU each).
// Arguments go to tap; test files may be named as `test/….test.ts`. `npx tap test/x.test.ts` still
// runs a file straight from its TypeScript (`.taprc`).
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = dirname(dirname(fileURLToPath(import.meta.url)))
const require = createRequire(import.meta.url)
// A folder per run: two runs at once (CI's two databases) never write each other's files.
// TEST_BUILD_DIR names a folder in the project already compiled (CI compiles once, in its type
// check, for both runs); it is used as it is and left in place.
const prebuilt = process.env.TEST_BUILD_DIR ? resolve(root, process.env.TEST_BUILD_DIR) : undefined
const out = prebuilt ?? join(root, '.build', `test-${process.pid}`)
const clean = () => {
  if (!prebuilt) rmSync(out, { recursive: true, force: true })
}

if (prebuilt) {
  if (!existsSync(join(out, 'test'))) {
    console.error(`npm test: TEST_BUILD_DIR ${process.env.TEST_BUILD_DIR} holds no compiled tests`)
    process.exit(1)
  }
} else {
  const tsc = spawnSync(
    process.execPath,
    [
      require.resolve('typescript/bin/tsc'),
      '-p',
      join(root, 'tsconfig.json'),
      '--noEmit',
      'false',
      '--noCheck',
      '--outDir',
      out
    ],
    { cwd: root, stdio: 'inherit' }
  )
  if (tsc.status !== 0) {
    clean()
    console.error('npm test: the TypeScript emit failed')
    process.exit(1)
  }
}

const compiled = (file) => join(out, relative(root, resolve(root, file)).replace(/\.ts$/, '.js'))
const args = process.argv.slice(2)
const named = args.filter((a) => /\.test\.ts$/.test(a))
const options = args.filter((a) => !/\.test\.ts$/.test(a))
const files =
  named.length > 0
    ? named.map(compiled)
    : readdirSync(join(root, 'test'), { recursive: true })
        .filter((f) => f.endsWith('.test.ts'))
        .sort()
        .map((f) => compiled(join('test', f)))

const tap = spawn(join(root, 'node_modules', '.bin', 'tap'), [...options, ...files], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, TAP_RCFILE: join(root, 'test', 'compiled.taprc') }
})
// Ctrl-C reaches tap from the terminal; a signal sent to this process alone is passed on.
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => tap.kill(signal))
tap.on('exit', (code, signal) => {
  clean()
  process.exit(code ?? (signal ? 1 : 0))
})
