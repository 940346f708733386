/**
 * Writes the service's OpenAPI document (what `GET /openapi.json` serves) to a file, for tools
 * that check it: `npx tsx scripts/openapi.ts <file>`. Builds the app on an in-memory database.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'

const file = process.argv[2] ?? 'openapi.json'
const config = loadConfig({
  NODE_ENV: 'test',
  LOG_LEVEL: 'silent',
  DATA_DIR: 'memory://openapi',
  TOKEN_SECRET: 'openapi-document-openapi-document-0123456789',
  OPERATOR_API_KEY: 'amo_openapi-document-0123456789abcdefghijklmnop',
  PAYMENT_VENDORS: 'ACMEPAY=https://vendor.invalid'
})
const app = await buildApp(config, { announce: () => {} })
await app.ready()
mkdirSync(dirname(file), { recursive: true })
writeFileSync(file, JSON.stringify(app.swagger(), null, 2) + '\n')
await app.close()
