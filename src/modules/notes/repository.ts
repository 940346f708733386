import { asc, eq } from 'drizzle-orm'
import { notes } from '../../../drizzle/schema/index.js'
import type { Tx } from '../../db/index.js'

export type NoteInsert = typeof notes.$inferInsert

export function createNotesRepository() {
  return {
    /** The account's notes as their identity (body, document locations, time), oldest first. */
    async notesOf(tx: Tx, accountId: string) {
      return tx.select({ body: notes.body, documentLocations: notes.documentLocations, noteCreatedAt: notes.noteCreatedAt })
        .from(notes).where(eq(notes.accountId, accountId)).orderBy(asc(notes.noteCreatedAt), asc(notes.createdAt))
    },

    async insertNotes(tx: Tx, rows: NoteInsert[]): Promise<void> {
      if (rows.length > 0) await tx.insert(notes).values(rows)
    }
  }
}
