import { NotesRequest, NotesResponses } from '../../../schemas/notes.js'
import { defineSection } from '../post-import/section.js'
import { createNotesRepository } from './repository.js'
import { createNotesService } from './service.js'

export default defineSection<NotesRequest>({
  build({ base, config }) {
    const service = createNotesService(base, config.documentBucket)
    const repo = createNotesRepository()
    return {
      route: {
        summary: 'Add notes',
        description:
          'A note the account already has is not written again; one result per note. `unpin_at` is for a pinned ' +
          'note only: with `is_pinned` false or not given it is 400 `unexpected_field` at `notes.<i>.unpin_at`; before ' +
          '`created_at` (or before now, without one) it is `note_unpin_at_earlier_than_creation_date`.',
        body: NotesRequest,
        response: NotesResponses,
        takesTurn: true
      },
      write: (principal, { body }) => service.create(principal, body),
      planNew({ body }, account) {
        const plan = service.planForNewAccount(body, account, account.now)
        return { rows: [repo.tableRows(plan.rows)], detail: plan.detail }
      }
    }
  }
})
