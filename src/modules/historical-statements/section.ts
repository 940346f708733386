import { HistoricalStatementsRequest, HistoricalStatementsResponses } from '../../../schemas/historical-statements.js'
import { defineSection } from '../post-import/section.js'
import { createHistoricalStatementsRepository } from './repository.js'
import { createHistoricalStatementsService } from './service.js'

export default defineSection<HistoricalStatementsRequest>({
  build({ base, config }) {
    const service = createHistoricalStatementsService(base, config.documentBucket)
    const repo = createHistoricalStatementsRepository()
    return {
      route: {
        summary: 'Add historical statements',
        description: 'Past statements; answered with the statements normalised (decimals as strings, relative paths).',
        body: HistoricalStatementsRequest,
        response: HistoricalStatementsResponses,
        takesTurn: true
      },
      write: (principal, { body }) => service.create(principal, body),
      planNew({ body }, account) {
        const plan = service.planForNewAccount(body, account, account.today)
        return { rows: [repo.tableRows(plan.rows)], detail: plan.detail }
      }
    }
  }
})
