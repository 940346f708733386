import { Type, type Static } from 'typebox'
import { DateTimeString, Strict, Text } from './fields.js'
import { DocumentPath, PostImportBody, StandardErrorResponses } from './post-import.js'

/** Notes. */
export const Note = Strict({
  body: Type.Optional(Text(10000)),
  document_paths: Type.Optional(Type.Array(Strict({ document_path: DocumentPath }), { minItems: 1, maxItems: 20 })),
  created_at: Type.Optional(DateTimeString),
  is_pinned: Type.Optional(Type.Boolean({ default: false })),
  unpin_at: Type.Optional(
    Type.Unsafe<string>({
      ...DateTimeString,
      description:
        'When the note stops being pinned. Only on a pinned note (`is_pinned: true`; otherwise `unexpected_field`), ' +
        'and not before `created_at`, or before now when `created_at` is not given (`note_unpin_at_earlier_than_creation_date`).'
    })
  )
})
export type Note = Static<typeof Note>

export const NotesRequest = PostImportBody({
  notes: Type.Array(Note, { minItems: 1, maxItems: 500 })
})
export type NotesRequest = Static<typeof NotesRequest>

export const NoteResult = Type.Object({
  created_at: Type.String(),
  body: Type.Union([Type.String(), Type.Null()]),
  status: Type.Union([Type.Literal('NOTE_CREATION_SUCCESS'), Type.Literal('NOTE_ALREADY_EXISTS')])
})
export type NoteResult = Static<typeof NoteResult>

export const NotesResponses = { 201: Type.Array(NoteResult), ...StandardErrorResponses }
