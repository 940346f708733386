import { defineConfig } from 'drizzle-kit'

export default defineConfig({
  dialect: 'postgresql',
  // Every table is in drizzle/schema/ (a section's in post-import.ts); index.ts exports them all.
  schema: './drizzle/schema/index.ts',
  out: './drizzle/migrations'
})
