import type { Audited } from '../audit/graphql.js'
import { ownerOf, type GraphqlResolvers, type Guard } from '../auth/guard.js'
import type { FailuresService } from '../failures/service.js'
import type { RetentionService } from '../retention/service.js'
import { formatDateTime, formatNullableDateTime } from '../../format.js'
import type { OperatorService, UpdateSupplierInput } from './service.js'

type Input<T> = { input: T }

const processTarget = ({ input }: Input<{ importSupplierCode: string; externalAccountNumber: string }>) => ({
  type: 'import_process' as const,
  id: `${input.importSupplierCode}/${input.externalAccountNumber}`
})

/**
 * The operator's configuration (organisations, API keys, suppliers, teams, skips, erasures) and
 * what organisations read of their own suppliers (suppliers, events, progress).
 */
export function operatorResolvers(deps: {
  guard: Guard
  audited: Audited
  operator: OperatorService
  retention: RetentionService
  failures: FailuresService
  supplierIdOf: (code: string, owner: string | undefined) => Promise<string>
}): GraphqlResolvers {
  const { guard, audited, operator, retention, failures, supplierIdOf } = deps
  return {
    Mutation: {
      createOrganisation: audited(
        'createOrganisation',
        ({ input }: Input<{ name: string }>) => ({ type: 'organisation', id: input.name.trim() }),
        ({ input }, record) => operator.createOrganisation(input.name, record)
      ),
      createApiKey: audited(
        'createApiKey',
        () => null,
        ({ input }: Input<{ organisation: string }>, record) => operator.createApiKey(input.organisation, record)
      ),
      revokeApiKey: audited(
        'revokeApiKey',
        ({ input }: Input<{ id: string }>) => ({ type: 'api_key', id: input.id }),
        async ({ input }, record) => {
          const key = await operator.revokeApiKey(input.id, record)
          return { ...key, revokedAt: formatNullableDateTime(key.revokedAt) }
        }
      ),
      createImportSupplier: audited(
        'createImportSupplier',
        ({ input }: Input<Parameters<typeof operator.createImportSupplier>[0]>) => ({
          type: 'import_supplier',
          id: input.code
        }),
        ({ input }, record) => operator.createImportSupplier(input, record)
      ),
      updateImportSupplier: audited(
        'updateImportSupplier',
        ({ input }: Input<UpdateSupplierInput>) => ({ type: 'import_supplier', id: input.code }),
        ({ input }, record) => operator.updateImportSupplier(input, record)
      ),
      createOperationsTeam: audited(
        'createOperationsTeam',
        ({ input }: Input<{ name: string }>) => ({ type: 'operations_team', id: input.name.trim() }),
        ({ input }, record) => operator.createOperationsTeam(input.name, record)
      ),
      skipImportProcess: audited('skipImportProcess', processTarget, ({ input }, record) =>
        operator.skipImportProcess(input.importSupplierCode, input.externalAccountNumber, record)
      ),
      eraseStagedData: audited('eraseStagedData', processTarget, async ({ input }, record) =>
        retention.eraseStagedData(
          await operator.supplier(input.importSupplierCode),
          input.externalAccountNumber,
          record
        )
      )
    },
    Query: {
      importSuppliers: guard.resolver('anyone', (_args: unknown, caller) =>
        operator.listImportSuppliers(ownerOf(caller))
      ),
      organisations: guard.resolver('operator', () => operator.listOrganisations()),
      apiKeys: guard.resolver('operator', async (args: { organisation?: string | null }) => {
        const keys = await operator.listApiKeys(args.organisation ?? undefined)
        return keys.map((k) => ({
          ...k,
          createdAt: formatDateTime(k.createdAt),
          revokedAt: formatNullableDateTime(k.revokedAt)
        }))
      }),
      operationsTeams: guard.resolver('operator', () => operator.listOperationsTeams()),
      operationsTeamExists: guard.resolver('anyone', (args: { name: string }) =>
        operator.operationsTeamExists(args.name)
      ),
      importProcessEvents: guard.resolver(
        'anyone',
        async (args: { importSupplierCode: string; externalAccountNumber: string }, caller) => {
          const events = await operator.importProcessEvents(
            args.importSupplierCode,
            args.externalAccountNumber,
            ownerOf(caller)
          )
          return events.map((e) => ({ ...e, at: formatDateTime(e.at) }))
        }
      ),
      migrationProgress: guard.resolver('anyone', async (args: { importSupplierCode: string }, caller) => {
        const owner = ownerOf(caller)
        const supplierId = await supplierIdOf(args.importSupplierCode, owner)
        const [progress, failing] = await Promise.all([
          operator.migrationProgress(args.importSupplierCode, owner),
          failures.failingAccounts(supplierId)
        ])
        return { ...progress, failing }
      })
    }
  }
}
