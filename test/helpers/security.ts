import type { Test } from 'tap'
import type { LightMyRequestResponse, RouteOptions } from 'fastify'
import { SECTIONS, type SectionListing } from '../../schemas/sections.js'
import { daysFromToday } from './accounts.js'

/**
 * Routes that need no token (see the README): health probes, the API documentation, GraphQL
 * (obtainToken), and the dashboard's page and assets (they hold no data; the page signs in).
 */
export function isPublicRoute(url: string): boolean {
  return (
    url === '/healthz' ||
    url === '/readyz' ||
    url === '/openapi.json' ||
    url === '/graphql' ||
    url === '/docs' ||
    url.startsWith('/docs/') ||
    url === '/dashboard' ||
    url.startsWith('/dashboard/')
  )
}

/** Data-import GETs that hold nothing of an organisation: every organisation reads the same answer. */
export const SHARED_GET_PATHS = ['/v1/data-import/error-codes/']

export interface Endpoint {
  method: string
  url: string
}

/** Records every route the app registers (pass `collect` as `onRoute`), public ones set apart. */
export function routeRecorder() {
  const routes: Endpoint[] = []
  return {
    collect(route: RouteOptions) {
      for (const method of [route.method].flat()) routes.push({ method, url: route.url as string })
    },
    /** Every route that needs a token (HEAD ones too: Fastify adds one per GET). */
    protected(): Endpoint[] {
      return routes.filter((r) => !isPublicRoute(r.url))
    },
    all(): Endpoint[] {
      return [...routes]
    }
  }
}

/** A concrete URL for a route pattern: path parameters filled in (percent-encoded). */
export function concreteUrl(pattern: string, params: Record<string, string> = {}): string {
  return pattern.replace(/:(\w+)/g, (_m, name: string) => {
    const value = params[name]
    if (value === undefined) throw new Error(`no value for :${name} in ${pattern}`)
    return encodeURIComponent(value)
  })
}

/** A body for each post-import endpoint (account reference not included), valid for the example account. */
export function postImportBodies(ledgerNumber = 'L-00000000'): Record<string, Record<string, unknown>> {
  return {
    // A section whose listing brings its request example (schemas/sections.ts) is tried with it.
    ...Object.fromEntries(
      SECTIONS.flatMap((section: SectionListing) =>
        section.example ? [[`/v1/data-import${section.path}`, section.example]] : []
      )
    ),
    '/v1/data-import/notes/create/': { notes: [{ body: 'Moved from the legacy CRM.', is_pinned: true }] },
    '/v1/data-import/transactions/create/': {
      transactions: [{ transaction_id: 'SEC-1', transaction_date: daysFromToday(0), amount: '1.00', type: 'CHARGE' }]
    },
    '/v1/data-import/historical-agreements/create/': {
      agreements: [
        {
          supply_point_identifier: '1200012345678',
          tariff_code: 'E-1R-VAR-19-01-01',
          effective_from: '2019-01-01',
          effective_to: '2021-03-01'
        }
      ]
    },
    '/v1/data-import/historical-billing-documents/create/': {
      ledger_code: 'ENERGY',
      ledger_number: ledgerNumber,
      billing_document_type: 'ITEM_BASED',
      historical_billing_documents: [
        { billing_document_identifier: 'BILL-1', billing_document_type: 'ITEM_BASED', issued_date: '2025-04-02' }
      ]
    },
    '/v1/data-import/historical-statements/create/': {
      statements: [
        {
          statement_id: 'ST-1',
          bill_period_from_date: '2025-01-01',
          bill_period_to_date: '2025-01-31',
          issued_date: '2025-02-03',
          gross_amount: '53.50'
        }
      ]
    },
    '/v1/data-import/payment-instruction/create/': { vendor: 'ACMEPAY', reference: 'pm_1', type: 'CARD' }
  }
}

/** A vendor no request should reach (nothing listens on port 9): configured so `ACMEPAY` is a valid code. */
export const UNREACHABLE_VENDOR = {
  PAYMENT_VENDORS: 'ACMEPAY=http://127.0.0.1:9',
  PAYMENT_VENDOR_RETRIES: '0',
  PAYMENT_VENDOR_TIMEOUT_MS: '500'
}

type Assert = Pick<Test, 'equal' | 'same' | 'type' | 'ok'>

/**
 * The body of a standalone top-level code: exactly `detail` (a string), `code` and `errors: []`,
 * as JSON, with the given status (HEAD answers carry no body).
 */
export function expectStandalone(
  t: Assert,
  res: LightMyRequestResponse,
  status: number,
  code: string,
  label: string
): void {
  t.equal(res.statusCode, status, `${label}: HTTP ${status}`)
  if (res.raw.req.method === 'HEAD') return
  t.equal(String(res.headers['content-type']).split(';')[0], 'application/json', `${label}: JSON`)
  const body = res.json()
  t.type(body.detail, 'string', `${label}: detail`)
  t.same(body, { detail: body.detail, code, errors: [] }, `${label}: ${code} with errors []`)
}

/** The body shape of any 4xx: detail, code, errors of {detail, code, attr}. */
export function expectErrorShape(t: Assert, res: LightMyRequestResponse, label: string): void {
  t.ok(
    res.statusCode >= 400 && res.statusCode < 500,
    `${label}: a 4xx (got ${res.statusCode} ${res.body.slice(0, 200)})`
  )
  const body = res.json()
  t.type(body.detail, 'string', `${label}: detail`)
  t.type(body.code, 'string', `${label}: code`)
  t.ok(Array.isArray(body.errors), `${label}: errors is a list`)
  for (const e of body.errors ?? []) {
    t.ok(
      typeof e.detail === 'string' && typeof e.code === 'string' && (e.attr === null || typeof e.attr === 'string'),
      `${label}: entry ${JSON.stringify(e).slice(0, 120)} has detail, code, attr`
    )
  }
}
