import type { HistoricalAgreementsRequest } from '../../../schemas/historical-agreements.js'
import { CODE } from '../../../schemas/error-codes.js'
import { ruleContext, utcToday } from '../../rules/context.js'
import type { OrganisationPrincipal } from '../auth/service.js'
import { type PostImportBase } from '../post-import/base.js'
import { invalidRequest } from '../../errors.js'
import { createHistoricalAgreementsRepository, type AgreementInsert } from './repository.js'

/** A date range with an exclusive end; null is open-ended. */
interface Span {
  supplyPointId: string
  tariffCode: string
  effectiveFrom: string
  effectiveTo: string | null
}

const overlaps = (a: Span, b: Span) =>
  a.supplyPointId === b.supplyPointId &&
  a.effectiveFrom < (b.effectiveTo ?? '9999-12-31') &&
  b.effectiveFrom < (a.effectiveTo ?? '9999-12-31')
const identical = (a: Span, b: Span) =>
  a.supplyPointId === b.supplyPointId &&
  a.tariffCode === b.tariffCode &&
  a.effectiveFrom === b.effectiveFrom &&
  a.effectiveTo === b.effectiveTo

/** An agreement of a supply point as stored: current (from the account import) or historical. */
export interface StoredAgreement extends Span {
  historical: boolean
}

/**
 * The agreements of a request against the account's supply points and stored agreements: the
 * rows to store (one identical to an imported one is a retry, skipped), or every problem.
 * Pure: the single endpoint and batches both use it.
 */
export function planAgreements(
  request: Pick<HistoricalAgreementsRequest, 'agreements'>,
  pointIds: Map<string, string>,
  stored: StoredAgreement[],
  today: string
): AgreementInsert[] {
  const ctx = ruleContext([], today)
  // Each supply point's first current agreement (from the account import) bounds its history.
  const firstCurrent = new Map<string, string>()
  for (const a of stored) {
    const first = firstCurrent.get(a.supplyPointId)
    if (!a.historical && (first === undefined || a.effectiveFrom < first)) {
      firstCurrent.set(a.supplyPointId, a.effectiveFrom)
    }
  }
  const imported = stored.filter((a) => a.historical)
  const earlier: Span[] = [] // the request's agreements so far that the overlap rule could read
  const rows: AgreementInsert[] = []
  request.agreements.forEach((a, i) => {
    const at = `agreements.${i}`
    const supplyPointId = pointIds.get(a.supply_point_identifier)
    if (supplyPointId === undefined) {
      ctx.report(CODE.supply_point_not_found, `${at}.supply_point_identifier`, {
        supply_point_identifier: a.supply_point_identifier
      })
    }
    const ordered = a.effective_from < a.effective_to
    if (!ordered) {
      ctx.report(CODE.start_date_later_than_end_date, `${at}.effective_to`, {
        end: 'effective_to (exclusive)',
        start: 'effective_from'
      })
    }
    if (supplyPointId === undefined || !ordered) return
    const span: Span = {
      supplyPointId,
      tariffCode: a.tariff_code,
      effectiveFrom: a.effective_from,
      effectiveTo: a.effective_to
    }
    const first = firstCurrent.get(supplyPointId)
    if (first !== undefined && a.effective_to > first) {
      ctx.report(CODE.historical_agreement_overlaps_current_agreement, `${at}.effective_to`, { date: first })
    }
    const same = imported.find((h) => identical(h, span))
    if (imported.some((h) => h !== same && overlaps(h, span)) || earlier.some((e) => overlaps(e, span))) {
      ctx.report(CODE.gaps_or_overlaps_in_agreement_dates, `${at}.effective_from`)
    }
    earlier.push(span)
    if (same === undefined) rows.push({ ...span, historical: true }) // identical to an imported one: a retry, skipped
  })
  if (ctx.errors.length > 0) throw invalidRequest(ctx.errors)
  return rows
}

export const agreementsDetail = (rows: AgreementInsert[]) => (rows.length > 0 ? { created: rows.length } : undefined)

export function createHistoricalAgreementsService(base: PostImportBase) {
  const repo = createHistoricalAgreementsRepository()

  return {
    /**
     * Stores the agreements not imported yet. The rules read the account's supply points and
     * agreements, so they all run inside the locked transaction.
     */
    async create(principal: OrganisationPrincipal, request: HistoricalAgreementsRequest): Promise<void> {
      const account = await base.resolve(principal, request.import_supplier, request.external_account_number)
      await base.write(principal, account, async (tx) => {
        const pointIds = new Map((await repo.supplyPointsOf(tx, account.id)).map((p) => [p.identifier, p.id]))
        const rows = planAgreements(request, pointIds, await repo.agreementsOf(tx, account.id), utcToday())
        await repo.insertAgreements(tx, rows)
        return { result: undefined, detail: agreementsDetail(rows) }
      })
    }
  }
}
