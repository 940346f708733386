import { newId } from '../../ids.js'
import { CODE } from '../../../schemas/error-codes.js'
import type { NoteResult, NotesRequest } from '../../../schemas/notes.js'
import type { ErrorEntry } from '../../errors.js'
import { formatDateTime } from '../../format.js'
import { ruleContext, utcToday } from '../../rules/context.js'
import { checkDocumentPath, documentLocation } from '../../rules/documents.js'
import type { OrganisationPrincipal } from '../auth/service.js'
import { type ImportedAccount, type PostImportBase } from '../post-import/base.js'
import { invalidRequest } from '../../errors.js'
import { createNotesRepository, type NoteInsert } from './repository.js'

/** Whole seconds: a note's time is compared and echoed to the second. */
const toSecond = (date: Date): Date => new Date(Math.floor(date.getTime() / 1000) * 1000)

export interface Identity {
  body: string | null
  locations: string[]
  createdAt: Date
}
const sameContent = (a: Identity, b: { body: string | null; locations: string[] }) =>
  a.body === b.body && a.locations.length === b.locations.length && a.locations.every((l, i) => l === b.locations[i])

/** What a notes request stores and answers, given the account's notes that could match. */
export interface NotesPlan {
  results: NoteResult[]
  rows: NoteInsert[]
  detail: Record<string, unknown> | undefined
}

/**
 * The notes of a request against the account's stored notes (`stored`): each is new, or one the
 * account already has (same body, same set of locations, same time when given), duplicates
 * inside the request included. Pure: the single endpoint and batches both use it.
 */
export function planNotes(
  request: Pick<NotesRequest, 'notes'>,
  account: { id: string },
  locations: string[][],
  stored: Identity[],
  now: Date
): NotesPlan {
  const known: Identity[] = [...stored]
  const rows: NoteInsert[] = []
  const results = request.notes.map((note, i): NoteResult => {
    const content = { body: note.body ?? null, locations: locations[i]! }
    const given = note.created_at !== undefined ? toSecond(new Date(note.created_at)) : undefined
    const existing = known.find(
      (k) => sameContent(k, content) && (given === undefined || k.createdAt.getTime() === given.getTime())
    )
    if (existing) {
      return { created_at: formatDateTime(existing.createdAt), body: content.body, status: 'NOTE_ALREADY_EXISTS' }
    }
    const createdAt = given ?? toSecond(now)
    known.push({ ...content, createdAt })
    rows.push({
      id: newId(),
      accountId: account.id,
      body: content.body,
      documentLocations: content.locations,
      noteCreatedAt: createdAt,
      isPinned: note.is_pinned ?? false,
      unpinAt: note.unpin_at !== undefined ? new Date(note.unpin_at) : null
    })
    return { created_at: formatDateTime(createdAt), body: content.body, status: 'NOTE_CREATION_SUCCESS' }
  })
  return { results, rows, detail: rows.length > 0 ? { created: rows.length } : undefined }
}

export function createNotesService(base: PostImportBase, documentBucket: string) {
  const repo = createNotesRepository()

  /** The rules of for notes; returns each note's sorted document locations. */
  function check(
    request: Pick<NotesRequest, 'notes'>,
    account: Pick<ImportedAccount, 'supplier'>
  ): { errors: ErrorEntry[]; locations: string[][] } {
    const ctx = ruleContext([], utcToday())
    const locations = request.notes.map((note, i) => {
      if (note.body === undefined && note.document_paths === undefined) {
        ctx.report(CODE.note_body_or_document_path_not_found, `notes.${i}`)
      }
      if (note.unpin_at !== undefined && note.is_pinned !== true) {
        ctx.report(CODE.unexpected_field, `notes.${i}.unpin_at`, {
          detail: 'unpin_at is only allowed on a pinned note.'
        })
      } else if (note.unpin_at !== undefined && new Date(note.unpin_at) < new Date(note.created_at ?? Date.now())) {
        ctx.report(CODE.note_unpin_at_earlier_than_creation_date, `notes.${i}.unpin_at`)
      }
      const paths = (note.document_paths ?? []).map((d, j) =>
        checkDocumentPath(ctx, d.document_path, `notes.${i}.document_paths.${j}.document_path`)
      )
      return [
        ...new Set(
          paths
            .filter((p): p is string => p !== undefined)
            .map((p) => documentLocation(documentBucket, account.supplier.documentRoot, p))
        )
      ].sort()
    })
    return { errors: ctx.errors, locations }
  }

  return {
    /** Creates the notes that the account does not have yet (duplicates inside the request count too). */
    async create(principal: OrganisationPrincipal, request: NotesRequest): Promise<NoteResult[]> {
      const account = await base.resolve(principal, request.import_supplier, request.external_account_number)
      const { errors, locations } = check(request, account)
      if (errors.length > 0) throw invalidRequest(errors)
      const bodies = request.notes.flatMap((n) => (n.body === undefined ? [] : [n.body]))
      return base.readAndWrite(
        principal,
        account,
        (tx) => repo.notesLike(tx, account.id, bodies),
        async (tx, stored) => {
          const plan = planNotes(
            request,
            account,
            locations,
            stored.map((n) => ({ body: n.body, locations: n.documentLocations, createdAt: n.noteCreatedAt })),
            new Date()
          )
          return {
            result: plan.results,
            detail: plan.detail,
            writes: plan.rows.length > 0 ? [repo.insertStatement(tx, plan.rows)] : []
          }
        }
      )
    },

    /** The notes of a request for an account that has none yet (a batch's new account): rules, then the plan. */
    planForNewAccount(
      request: Pick<NotesRequest, 'notes'>,
      account: Pick<ImportedAccount, 'id' | 'supplier'>,
      now: Date
    ): NotesPlan {
      const { errors, locations } = check(request, account)
      if (errors.length > 0) throw invalidRequest(errors)
      return planNotes(request, account, locations, [], now)
    }
  }
}
