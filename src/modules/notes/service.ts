import { randomUUID } from 'node:crypto'
import type { NoteResult, NotesRequest } from '../../../schemas/notes.js'
import type { ErrorEntry } from '../../errors.js'
import { formatDateTime } from '../../format.js'
import { ruleContext, utcToday } from '../../rules/context.js'
import { checkDocumentPath, documentLocation } from '../../rules/documents.js'
import type { OrganisationPrincipal } from '../auth/service.js'
import { invalidRequest, type ImportedAccount, type PostImportBase } from '../post-import/service.js'
import { createNotesRepository, type NoteInsert } from './repository.js'

/** Whole seconds: a note's time is compared and echoed to the second. */
const toSecond = (date: Date): Date => new Date(Math.floor(date.getTime() / 1000) * 1000)

interface Identity { body: string | null; locations: string[]; createdAt: Date }
const sameContent = (a: Identity, b: { body: string | null; locations: string[] }) =>
  a.body === b.body && a.locations.length === b.locations.length && a.locations.every((l, i) => l === b.locations[i])

export function createNotesService(base: PostImportBase, documentBucket: string) {
  const repo = createNotesRepository()

  /** The rules of §9 for notes; returns each note's sorted document locations. */
  function check(request: NotesRequest, account: ImportedAccount): { errors: ErrorEntry[]; locations: string[][] } {
    const ctx = ruleContext([], utcToday())
    const locations = request.notes.map((note, i) => {
      if (note.body === undefined && note.document_paths === undefined) {
        ctx.report('note_body_or_document_path_not_found', `notes.${i}`, 'A note needs a body or document paths.')
      }
      if (note.unpin_at !== undefined && note.is_pinned !== true) {
        ctx.report('unexpected_field', `notes.${i}.unpin_at`, 'unpin_at is only allowed on a pinned note.')
      } else if (note.unpin_at !== undefined && new Date(note.unpin_at) < new Date(note.created_at ?? Date.now())) {
        ctx.report('note_unpin_at_earlier_than_creation_date', `notes.${i}.unpin_at`, 'unpin_at is before the note was created.')
      }
      const paths = (note.document_paths ?? []).map((d, j) => checkDocumentPath(ctx, d.document_path, `notes.${i}.document_paths.${j}.document_path`))
      return [...new Set(paths.filter((p): p is string => p !== undefined).map((p) => documentLocation(documentBucket, account.supplier.documentRoot, p)))].sort()
    })
    return { errors: ctx.errors, locations }
  }

  return {
    /** Creates the notes that the account does not have yet (duplicates inside the request count too). */
    async create(principal: OrganisationPrincipal, request: NotesRequest): Promise<NoteResult[]> {
      const account = await base.resolve(principal, request.import_supplier, request.external_account_number)
      const { errors, locations } = check(request, account)
      if (errors.length > 0) throw invalidRequest(errors)
      const now = toSecond(new Date())
      const bodies = request.notes.flatMap((n) => (n.body === undefined ? [] : [n.body]))
      return base.readAndWrite(principal, account, (tx) => repo.notesLike(tx, account.id, bodies), async (tx, stored) => {
        const known: Identity[] = stored.map((n) => ({ body: n.body, locations: n.documentLocations, createdAt: n.noteCreatedAt }))
        const rows: NoteInsert[] = []
        const results = request.notes.map((note, i): NoteResult => {
          const content = { body: note.body ?? null, locations: locations[i]! }
          const given = note.created_at !== undefined ? toSecond(new Date(note.created_at)) : undefined
          const existing = known.find((k) => sameContent(k, content) && (given === undefined || k.createdAt.getTime() === given.getTime()))
          if (existing) return { created_at: formatDateTime(existing.createdAt), body: content.body, status: 'NOTE_ALREADY_EXISTS' }
          const createdAt = given ?? now
          known.push({ ...content, createdAt })
          rows.push({
            id: randomUUID(), accountId: account.id, body: content.body, documentLocations: content.locations, noteCreatedAt: createdAt,
            isPinned: note.is_pinned ?? false, unpinAt: note.unpin_at !== undefined ? new Date(note.unpin_at) : null
          })
          return { created_at: formatDateTime(createdAt), body: content.body, status: 'NOTE_CREATION_SUCCESS' }
        })
        return {
          result: results,
          detail: rows.length > 0 ? { endpoint: 'notes', created: rows.length } : undefined,
          writes: rows.length > 0 ? [repo.insertStatement(tx, rows)] : []
        }
      })
    }
  }
}
