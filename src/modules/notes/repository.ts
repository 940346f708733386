import { and, asc, eq, sql } from 'drizzle-orm'
import { notes } from '../../../drizzle/schema/index.js'
import { textList, type Tx } from '../../db/index.js'
import { insertRows, type TableRows } from '../../db/insert.js'

export type NoteInsert = typeof notes.$inferInsert

export function createNotesRepository() {
  return {
    /**
     * The statement that reads the account's notes that could match notes with these bodies
     * (the same body, or none), as their identity (body, document locations, time), oldest first.
     */
    notesLike(tx: Tx, accountId: string, bodies: string[]) {
      return tx
        .select({ body: notes.body, documentLocations: notes.documentLocations, noteCreatedAt: notes.noteCreatedAt })
        .from(notes)
        .where(
          and(eq(notes.accountId, accountId), sql`(${notes.body} is null or ${notes.body} in ${textList(bodies)})`)
        )
        .orderBy(asc(notes.noteCreatedAt), asc(notes.createdAt))
    },

    /** Notes to insert with an account a batch creates. */
    tableRows(rows: NoteInsert[]): TableRows {
      return { table: notes, rows }
    },

    /** The insert of at least one note as a statement, to be sent with others. */
    insertStatement(tx: Tx, rows: NoteInsert[]) {
      return insertRows(tx, notes, rows)
    }
  }
}
