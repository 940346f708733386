// `npm run build`: TypeScript's type check and emit into dist/ (about 25 s of CPU). `npm start`
// runs it with --noCheck, the emit alone (about 8 s): the type check is the developers' (`npm run
// typecheck`, CI). tsc prints nothing while it works, so say so first. Arguments go to tsc
// (`npm run build -- --watch`).
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = dirname(dirname(fileURLToPath(import.meta.url)))
const require = createRequire(import.meta.url)

const args = process.argv.slice(2)
console.log(
  args.includes('--noCheck')
    ? 'Compiling the service (about 10 s, longer on a busy machine)…'
    : 'Compiling and type-checking the service (about 25 s, longer on a busy machine)…'
)
const tsc = spawnSync(
  process.execPath,
  [require.resolve('typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json'), ...args],
  { cwd: root, stdio: 'inherit' }
)
process.exit(tsc.status ?? 1)
