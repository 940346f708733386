import { isObject } from '../http.js'
import { parseLine } from './input.js'
import { readLines } from './lines.js'
import type { ServiceClient } from './service-client.js'

/**
 * Checks made before any account is sent: the key is an organisation's (not the operator's), the
 * operations team exists, and the import suppliers named in the first lines of the input are
 * Ongoing and (at least one of them) the organisation's. A wrong setting is found at once, not
 * after every account failed on it; a line naming a supplier that is not yours among lines that
 * name yours is that line's mistake, reported with it.
 */

/** Lines read for the suppliers they name: a file names one supplier, or a few. */
const LINES_LOOKED_AT = 1000

/** The run cannot start: the problems, one sentence each. */
export class PreflightError extends Error {
  override name = 'PreflightError'
  constructor(readonly problems: string[]) {
    super(problems.join('; '))
  }
}

/** The import suppliers the first lines of the file name (lines that cannot be read are left to the run). */
export async function suppliersIn(file: string): Promise<string[]> {
  const lines = readLines(file, 64)
  const suppliers = new Set<string>()
  try {
    for (let seen = 0; seen < LINES_LOOKED_AT;) {
      const next = await lines.next()
      if (next === undefined) break
      if (next.text.trim() === '') continue
      seen++
      const parsed = parseLine(next.text)
      if ('item' in parsed && typeof parsed.item.account.import_supplier === 'string') {
        suppliers.add(parsed.item.account.import_supplier)
      }
    }
  } finally {
    lines.close()
  }
  return [...suppliers]
}

/**
 * The key is the service operator's, not an organisation's: it obtains a token, but every
 * data-import call answers 403. A usage mistake, found before anything is sent.
 */
export class OperatorKeyError extends Error {
  override name = 'OperatorKeyError'
  constructor() {
    super(
      "AMIS_API_KEY holds the service operator's key, which cannot import accounts: set it to an organisation API key (an operator makes one with npm run admin -- create-api-key <organisation>). Nothing was sent."
    )
  }
}

/** A field only the operator may read: an organisation's token gets `permission_denied`, the operator's its data. */
const OPERATOR_PROBE = 'query KeyKind { organisations { name } }'

/** Throws `OperatorKeyError` when the token in use is the operator's. */
export async function refuseOperatorKey(client: ServiceClient): Promise<void> {
  const answer = await client.graphqlAnswer(OPERATOR_PROBE)
  const body = answer.body
  if (answer.status === 200 && isObject(body) && isObject(body.data) && Array.isArray(body.data.organisations)) {
    throw new OperatorKeyError()
  }
}

const QUERY = 'query Preflight($team: String!) { importSuppliers { code status } operationsTeamExists(name: $team) }'

/**
 * Throws `OperatorKeyError` for the operator's key, `PreflightError` when the team (unless
 * undefined: not needed) or a supplier is wrong.
 */
export async function preflight(
  client: ServiceClient,
  { team, suppliers }: { team: string | undefined; suppliers: string[] }
): Promise<void> {
  await refuseOperatorKey(client)
  const data = await client.graphql(QUERY, { team: team ?? '' })
  const problems: string[] = []
  if (team !== undefined && data.operationsTeamExists !== true) {
    problems.push(
      `operations team ${JSON.stringify(team)} does not exist: check --team (an operator lists the teams with npm run admin -- list-teams)`
    )
  }
  const known = new Map(
    (data.importSuppliers as Array<{ code: string; status: string }>).map((s) => [s.code, s.status])
  )
  if (suppliers.length > 0 && !suppliers.some((code) => known.has(code))) {
    const yours = [...known.keys()].join(', ') || 'none'
    problems.push(
      `${suppliers.length === 1 ? `import supplier ${suppliers[0]} is` : `import suppliers ${suppliers.join(', ')} are`} not your organisation's (yours: ${yours}): is this the right file and API key?`
    )
  }
  for (const code of suppliers) {
    const status = known.get(code)
    if (status !== undefined && status !== 'Ongoing') {
      problems.push(
        `the migration of import supplier ${code} is ${status}: nothing can be imported until an operator sets it to Ongoing (npm run admin -- update-supplier ${code} --status Ongoing)`
      )
    }
  }
  if (problems.length > 0) throw new PreflightError(problems)
}
