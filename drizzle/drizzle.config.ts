import { defineConfig } from 'drizzle-kit'

export default defineConfig({
  dialect: 'postgresql',
  // A section's own table may live in its folder (src/modules/<section>/table.ts).
  schema: ['./drizzle/schema/index.ts', './src/modules/*/table.ts'],
  out: './drizzle/migrations'
})
