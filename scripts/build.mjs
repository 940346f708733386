// `npm run build` (and so `npm start`, whose prestart it is): TypeScript's type check and emit into
// dist/. It takes about 25 s of CPU and prints nothing while it works, so say so first. Arguments go
// to tsc (`npm run build -- --watch`).
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = dirname(dirname(fileURLToPath(import.meta.url)))
const require = createRequire(import.meta.url)

console.log('Compiling the service (about 25 s, longer on a busy machine)…')
const tsc = spawnSync(
  process.execPath,
  [require.resolve('typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json'), ...process.argv.slice(2)],
  { cwd: root, stdio: 'inherit' }
)
process.exit(tsc.status ?? 1)
