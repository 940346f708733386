import { HistoricalAgreementsRequest, HistoricalAgreementsResponses } from '../../../schemas/historical-agreements.js'
import { defineSection } from '../post-import/section.js'
import { createHistoricalAgreementsRepository } from './repository.js'
import { agreementsDetail, createHistoricalAgreementsService, planAgreements } from './service.js'

export default defineSection<HistoricalAgreementsRequest>({
  build({ base }) {
    const service = createHistoricalAgreementsService(base)
    const repo = createHistoricalAgreementsRepository()
    return {
      route: {
        summary: 'Add historical agreements',
        description:
          "Past agreements of the account's supply points, ending on or before their first current agreement.",
        body: HistoricalAgreementsRequest,
        response: HistoricalAgreementsResponses,
        takesTurn: true
      },
      write: (principal, { body }) => service.create(principal, body),
      planNew({ body }, account) {
        const pointIds = new Map(account.rows.supplyPoints.map((p) => [p.identifier, p.id!]))
        const stored = account.rows.agreements.map((a) => ({
          supplyPointId: a.supplyPointId,
          tariffCode: a.tariffCode,
          effectiveFrom: a.effectiveFrom,
          effectiveTo: a.effectiveTo ?? null,
          historical: false
        }))
        const rows = planAgreements(body, pointIds, stored, account.today)
        return { rows: [repo.tableRows(rows)], detail: agreementsDetail(rows) }
      }
    }
  }
})
