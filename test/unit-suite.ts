// `npm run test:unit`: every unit test (test/unit/*.test.ts) in one process, so the modules they
// share are loaded once (a process per file spent most of its time starting). `npm test` still
// runs each file in its own process.
import { readdirSync } from 'node:fs'

const dir = new URL('./unit/', import.meta.url)
const files = readdirSync(dir).filter((file) => /\.test\.[jt]s$/.test(file))
for (const name of files.sort()) await import(new URL(name, dir).href)
