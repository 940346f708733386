import { customType } from 'drizzle-orm/pg-core'

/** Text compared by code point (`COLLATE "C"`), so ordering is the same on PGlite and PostgreSQL. */
export const textC = customType<{ data: string }>({
  dataType() {
    return 'text COLLATE "C"'
  }
})
