/**
 * Fails when drizzle/schema/ describes tables the migrations in drizzle/migrations/ do not make
 * (a schema change without its migration). `npm run db:check`; CI runs it.
 */
import { spawnSync } from 'node:child_process'
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const dir = 'drizzle/migrations'
const meta = join(dir, 'meta')
const before = new Set([...readdirSync(dir), ...readdirSync(meta).map((name) => join('meta', name))])
const journal = readFileSync(join(meta, '_journal.json'))
const run = spawnSync(
  'npx',
  ['drizzle-kit', 'generate', '--config', 'drizzle/drizzle.config.ts', '--name', 'db_check_probe'],
  { encoding: 'utf8' }
)
const output = `${run.stdout}${run.stderr}`
if (run.status === 0 && output.includes('No schema changes')) {
  console.log('db:check: drizzle/schema/ and drizzle/migrations/ agree')
  process.exit(0)
}
// Leave the tree as it was: the probe's migration is evidence, not something to commit.
for (const name of [...readdirSync(dir), ...readdirSync(meta).map((name) => join('meta', name))]) {
  if (!before.has(name)) rmSync(join(dir, name), { recursive: true, force: true })
}
writeFileSync(join(meta, '_journal.json'), journal)
console.error(output.trim())
console.error(
  'db:check: drizzle/schema/ differs from the migrations; run `npm run db:generate` and commit the new migration'
)
process.exit(1)
