import { newId } from '../../ids.js'
import { CODE } from '../../../schemas/error-codes.js'
import type {
  HistoricalStatementResult,
  HistoricalStatementsRequest,
  HistoricalStatementsResult
} from '../../../schemas/historical-statements.js'
import { formatDecimal } from '../../decimal.js'
import { ruleContext, utcToday, type RuleContext } from '../../rules/context.js'
import { checkDocumentPath, documentLocation } from '../../rules/documents.js'
import type { OrganisationPrincipal } from '../auth/service.js'
import { type ImportedAccount, type PostImportBase } from '../post-import/base.js'
import { invalidRequest } from '../../errors.js'
import { createHistoricalStatementsRepository, type HistoricalStatementInsert } from './repository.js'

type StoredStatement = Awaited<
  ReturnType<ReturnType<typeof createHistoricalStatementsRepository>['statementsOf']>
>[number]

/** A stored statement in the echoed form, so that a retry compares field by field. */
function echoOf(row: StoredStatement): HistoricalStatementResult {
  return {
    statement_id: row.statementId,
    bill_period_from_date: row.billPeriodFrom,
    bill_period_to_date: row.billPeriodTo,
    issued_date: row.issuedDate,
    ...(row.number !== null ? { number: row.number } : {}),
    gross_amount: formatDecimal(row.grossAmount),
    ...(row.statementPath !== null ? { statement_path: row.statementPath } : {})
  }
}

const FIELDS = [
  'statement_id',
  'bill_period_from_date',
  'bill_period_to_date',
  'issued_date',
  'number',
  'gross_amount',
  'statement_path'
] as const
const sameStatement = (a: HistoricalStatementResult, b: HistoricalStatementResult) => FIELDS.every((f) => a[f] === b[f])

export function createHistoricalStatementsService(base: PostImportBase, documentBucket: string) {
  const repo = createHistoricalStatementsRepository()

  /** The rules that read only the request; returns each statement normalised. */
  function normalise(
    ctx: RuleContext,
    request: Pick<HistoricalStatementsRequest, 'statements'>
  ): HistoricalStatementResult[] {
    const ids = new Set<string>()
    return request.statements.map((s, i) => {
      const at = `statements.${i}`
      if (ids.has(s.statement_id)) {
        ctx.report(CODE.duplicate_statement_ids, `${at}.statement_id`, { statement_id: s.statement_id })
      }
      ids.add(s.statement_id)
      if (s.bill_period_from_date > s.bill_period_to_date) {
        ctx.report(CODE.start_date_later_than_end_date, `${at}.bill_period_to_date`, {
          end: 'bill_period_to_date',
          start: 'bill_period_from_date'
        })
      }
      if (s.bill_period_to_date > ctx.today) {
        ctx.report(CODE.date_in_future, `${at}.bill_period_to_date`, { field: 'bill_period_to_date' })
      }
      if (s.issued_date < s.bill_period_from_date) {
        ctx.report(CODE.issued_date_before_bill_period_from_date, `${at}.issued_date`)
      }
      const path =
        s.statement_path !== undefined ? checkDocumentPath(ctx, s.statement_path, `${at}.statement_path`) : undefined
      return {
        statement_id: s.statement_id,
        bill_period_from_date: s.bill_period_from_date,
        bill_period_to_date: s.bill_period_to_date,
        issued_date: s.issued_date,
        ...(s.number !== undefined ? { number: s.number } : {}),
        gross_amount: formatDecimal(s.gross_amount),
        ...(path !== undefined ? { statement_path: path } : {})
      }
    })
  }

  /** The rows of the statements the account does not have yet; throws every rule problem. */
  function plan(
    request: Pick<HistoricalStatementsRequest, 'statements'>,
    account: Pick<ImportedAccount, 'id' | 'supplier'>,
    stored: Map<string, HistoricalStatementResult>,
    today: string
  ) {
    const ctx = ruleContext([], today)
    const statements = normalise(ctx, request)
    const rows: HistoricalStatementInsert[] = []
    statements.forEach((s, i) => {
      const existing = stored.get(s.statement_id)
      if (existing === undefined) {
        rows.push({
          id: newId(),
          accountId: account.id,
          statementId: s.statement_id,
          billPeriodFrom: s.bill_period_from_date,
          billPeriodTo: s.bill_period_to_date,
          issuedDate: s.issued_date,
          number: s.number ?? null,
          grossAmount: s.gross_amount,
          statementPath: s.statement_path ?? null,
          statementLocation:
            s.statement_path !== undefined
              ? documentLocation(documentBucket, account.supplier.documentRoot, s.statement_path)
              : null
        })
      } else if (!sameStatement(existing, s)) {
        ctx.report(CODE.historical_statement_already_exists, `statements.${i}.statement_id`, {
          statement_id: s.statement_id
        })
      } // identical: a retry, skipped
    })
    if (ctx.errors.length > 0) throw invalidRequest(ctx.errors)
    return {
      statements,
      rows,
      detail: rows.length > 0 ? { created: rows.length } : undefined
    }
  }

  return {
    /**
     * Stores the statements the account does not have yet. Every rule runs inside the locked
     * transaction, so the comparison with stored statements cannot race another request.
     */
    async create(
      principal: OrganisationPrincipal,
      request: HistoricalStatementsRequest
    ): Promise<HistoricalStatementsResult> {
      const account: ImportedAccount = await base.resolve(
        principal,
        request.import_supplier,
        request.external_account_number
      )
      return base.write(principal, account, async (tx) => {
        const stored = new Map((await repo.statementsOf(tx, account.id)).map((row) => [row.statementId, echoOf(row)]))
        const { statements, rows, detail } = plan(request, account, stored, utcToday())
        await repo.insertStatements(tx, rows)
        return {
          result: {
            import_supplier: request.import_supplier,
            external_account_number: request.external_account_number,
            statements
          },
          detail
        }
      })
    },

    /** The plan for an account that has no statements yet (a batch's new account). */
    planForNewAccount(
      request: Pick<HistoricalStatementsRequest, 'statements'>,
      account: Pick<ImportedAccount, 'id' | 'supplier'>,
      today: string
    ) {
      return plan(request, account, new Map(), today)
    }
  }
}
