import { errorCodeList } from '../../../schemas/error-code-list.js'
import type { GraphqlResolvers, Guard } from '../auth/guard.js'

/** `errorCodes`: fixed texts, the same for every caller (the operator's dashboard shows the meanings too). */
export function errorCodesResolvers(deps: { guard: Guard }): GraphqlResolvers {
  const codes = errorCodeList()
  return { Query: { errorCodes: deps.guard.resolver('anyone', async () => codes) } }
}
