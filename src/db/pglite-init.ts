/**
 * Makes a new embedded database: PGlite's initdb, then the migrations. openPglite runs this file as
 * a child process of its own on a data folder's first start (`node pglite-init.js <dir>
 * <migrations>`), so that initdb's WebAssembly module and the memory it used (about 500 MB at its
 * peak) leave with that process: a worker thread's, once ended, stayed in the server's memory.
 * Exit 0 when the database is made; otherwise the reason on stderr.
 */
import { PGlite } from '@electric-sql/pglite'
import { drizzle } from 'drizzle-orm/pglite'
import { migrate } from 'drizzle-orm/pglite/migrator'
import { pgliteErrorMessage } from './pglite-errors.js'
import { baselineCompilerOnly, pgliteStartParams } from './pglite-settings.js'

baselineCompilerOnly()
const [dataDir, migrationsFolder] = process.argv.slice(2)
try {
  if (!dataDir || !migrationsFolder) throw new Error('usage: pglite-init <data folder> <migrations folder>')
  const pg = await PGlite.create(dataDir, { startParams: pgliteStartParams() })
  await migrate(drizzle({ client: pg }), { migrationsFolder })
  await pg.close()
} catch (err) {
  process.stderr.write(`${pgliteErrorMessage(err)}\n`)
  process.exitCode = 1
}
