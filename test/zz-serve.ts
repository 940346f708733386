import { writeFileSync } from 'node:fs'
import { migrationServer } from './helpers/migrate.js'
const t = { teardown() {} }
const s = await migrationServer(t as never)
writeFileSync('/tmp/c45/server.json', JSON.stringify({ url: s.url, key: s.tenant.apiKey }))
console.log('ready', s.url)
setInterval(() => {}, 1 << 30)
