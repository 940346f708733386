// Creates or drops CI databases on a PostgreSQL server: `node .ci/pg.mjs create NAME` / `drop-prefix NAME`.
import postgres from 'postgres'

const [action, name] = process.argv.slice(2)
const adminUrl = process.env.PG_ADMIN_URL || 'postgres://postgres@127.0.0.1:5432/postgres'
if (!/^[a-z0-9_]+$/.test(name ?? '')) throw new Error('database name must match ^[a-z0-9_]+$')
const sql = postgres(adminUrl, { max: 1, onnotice: () => {}, connect_timeout: 10 })
try {
  if (action === 'create') {
    await sql.unsafe(`create database "${name}"`)
  } else if (action === 'drop-prefix') {
    const rows = await sql`select datname from pg_database where datname = ${name} or datname like ${name + '\\_%'}`
    for (const { datname } of rows) await sql.unsafe(`drop database if exists "${datname}" with (force)`)
  } else {
    throw new Error(`unknown action ${action}`)
  }
} finally {
  await sql.end()
}
