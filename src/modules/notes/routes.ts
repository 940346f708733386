import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { NotesRequest, NotesResponses } from '../../../schemas/notes.js'
import { organisationOf } from '../auth/service.js'
import type { PostImportRouteOptions } from '../post-import/services.js'
import { postImportStep } from '../../plugins/failures.js'

const notesRoutes: FastifyPluginAsyncTypebox<PostImportRouteOptions> = async function notesRoutes(app, opts) {
  const service = opts.services.notes
  app.post('/notes/create/', {
    config: postImportStep('notes'),
    schema: {
      tags: ['Post-import'],
      summary: 'Add notes',
      description: 'A note the account already has is not written again; one result per note. `unpin_at` is for a pinned ' +
        'note only: with `is_pinned` false or not given it is 400 `unexpected_field` at `notes.<i>.unpin_at`; before ' +
        '`created_at` (or before now, without one) it is `note_unpin_at_earlier_than_creation_date`.',
      body: NotesRequest,
      response: NotesResponses
    }
  }, async function createNotes(request, reply) {
    return reply.code(201).send(await service.create(organisationOf(request.principal), request.body))
  })
}

export default notesRoutes
