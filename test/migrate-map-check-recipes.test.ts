import t from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from './helpers/temp-dir.js'
import { openEngine, rows } from '../src/cli/migrate/map/engine.js'
import { STARTER_MAPPING } from '../src/cli/migrate/map/starter.js'
import { splitStatements } from '../src/cli/migrate/map/statements.js'
import { projectRoot } from '../src/paths.js'

/**
 * Every recipe of docs/mapping.md runs as written: its extract (the `csv title=<file>` blocks)
 * loaded as the engine declares a file (text columns and `source_row`, the header being row 1),
 * the starter mapping's macros defined, the recipe's SQL run in DuckDB, and its last SELECT
 * giving exactly the rows the recipe shows (the `json` block).
 */

interface Recipe {
  title: string
  files: Array<{ name: string; text: string }>
  sql: string
  expected: unknown[]
}

function recipes(markdown: string): Recipe[] {
  const part = markdown.split('\n## Recipes\n')[1] ?? ''
  return part
    .split('\n### ')
    .slice(1)
    .map((section) => {
      const blocks = [...section.matchAll(/```(\w+)([^\n]*)\n([\s\S]*?)```/g)]
      const of = (lang: string) => blocks.filter((b) => b[1] === lang)
      return {
        title: section.split('\n')[0]!,
        files: of('csv').map((b) => ({ name: /title=(\S+)/.exec(b[2]!)![1]!, text: b[3]! })),
        sql: of('sql')[0]?.[3] ?? '',
        expected: (of('json')[0]?.[3] ?? '')
          .split('\n')
          .filter((l) => l.trim() !== '')
          .map((l) => JSON.parse(l) as unknown)
      }
    })
}

const found = recipes(readFileSync(join(projectRoot, 'docs', 'mapping.md'), 'utf8'))

t.test('docs/mapping.md has the four recipes, each with an extract, its SQL and what it gives', async (t) => {
  t.same(
    found.map((r) => r.title),
    [
      'A debit/credit sign convention',
      'A tariff code map',
      'Several meters at one address',
      'A note split over several rows'
    ]
  )
  for (const r of found) {
    t.ok(r.files.length > 0 && r.sql !== '' && r.expected.length > 0, r.title)
  }
})

for (const recipe of found) {
  t.test(`recipe: ${recipe.title}`, async (t) => {
    const dir = tempDir(t)
    const engine = await openEngine(dir, { memoryLimit: '256MB', threads: 1 })
    t.teardown(() => engine.close())
    const c = engine.connection
    const starter = splitStatements(STARTER_MAPPING)
    // Its macros and code maps (its views read the starter's extract files, which a recipe has not).
    for (const s of starter.slice(0, -1)) if (!/CREATE VIEW/i.test(s.text)) await c.run(s.text)
    for (const file of recipe.files) {
      const path = join(dir, file.name)
      writeFileSync(path, file.text)
      const table = file.name.replace(/\.csv$/, '')
      await c.run(
        `CREATE TABLE "${table}" AS SELECT *, CAST(row_number() OVER () + 1 AS INTEGER) AS source_row ` +
          `FROM read_csv('${path}', header = true, all_varchar = true)`
      )
    }
    const statements = splitStatements(recipe.sql)
    for (const s of statements.slice(0, -1)) await c.run(s.text)
    const last = statements[statements.length - 1]!.text.replace(/;\s*$/, '')
    await c.run(`CREATE TABLE recipe_result AS ${last}`)
    const got = await rows(c, 'SELECT CAST(to_json(r) AS VARCHAR) AS j FROM recipe_result r')
    t.same(
      got.map((row) => JSON.parse(String(row.j)) as unknown),
      recipe.expected,
      'the rows the recipe shows'
    )
  })
}
