import { SUPPLIER_CODE, type SupplyPointChecks } from '../../../schemas/common.js'
import { CODE } from '../../../schemas/error-codes.js'
import { fieldError, fieldNotFound } from '../../errors.js'
import { pgErrorCode } from '../../db/index.js'
import type { AuthService } from '../auth/service.js'
import { hashSecret, newSecret } from '../auth/secrets.js'
import { hidesTraversal } from '../../rules/documents.js'
import type { AuditChanges, RecordChange } from '../audit/service.js'
import type { OperatorRepository, SupplierChanges, SupplierRecord, SupplierStatus } from './repository.js'

const OPERATOR = 'operator'
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const invalid = (detail: string) => fieldError(CODE.invalid, { detail })
/** `not_found` of something named: `notFound('Organisation Acme')` says "Organisation Acme does not exist." */
const notFound = (what: string) => fieldError(CODE.not_found, { what })

/** A name: trimmed, 1–255 characters, no control characters. */
function checkName(value: string, what: string): string {
  const name = value.trim()
  // eslint-disable-next-line no-control-regex
  if (name.length === 0 || Array.from(name).length > 255 || /[\u0000-\u001f\u007f]/.test(name)) {
    throw invalid(`${what} must be 1–255 characters without control characters.`)
  }
  return name
}

/** A relative prefix in the document bucket, stored without leading or trailing slashes. */
export function normaliseDocumentRoot(value: string): string {
  const root = value.trim().replace(/^\/+|\/+$/g, '')
  if (root === '') return ''
  const segments = root.split('/')
  const bad =
    root.length > 512 ||
    // eslint-disable-next-line no-control-regex
    /[\\\u0000-\u001f\u007f]/.test(root) ||
    /^[a-z][a-z0-9+.-]*:/i.test(root) ||
    segments.some((s) => s === '' || s === '.' || s === '..' || hidesTraversal(s))
  if (bad) {
    throw invalid(
      'documentRoot must be a relative path without "..", backslashes, schemes, empty segments or control characters.'
    )
  }
  return root
}

function checkLimit(value: number | null): number | null {
  if (value === null) return null
  if (!Number.isInteger(value) || value < 1 || value > 100_000) {
    throw invalid('maxConcurrentProcessing must be null or 1–100000.')
  }
  return value
}

/** `{field: {from, to}}` of the fields `changes` gives a new value; null when none does. */
export function changedFields(before: Required<SupplierChanges>, changes: SupplierChanges): AuditChanges | null {
  const changed: AuditChanges = {}
  for (const [field, to] of Object.entries(changes) as [keyof SupplierChanges, unknown][]) {
    if (before[field] !== to) changed[field] = { from: before[field], to }
  }
  return Object.keys(changed).length > 0 ? changed : null
}

/** Runs an insert and turns a unique violation into `already_exists`. */
async function unique<T>(what: string, insert: () => Promise<T>): Promise<T> {
  try {
    return await insert()
  } catch (err) {
    if (pgErrorCode(err) === '23505') throw fieldError(CODE.already_exists, { what })
    throw err
  }
}

export interface UpdateSupplierInput {
  code: string
  status?: SupplierStatus | null
  documentRoot?: string | null
  sendMigrationEmails?: boolean | null
  maxConcurrentProcessing?: number | null
  supplyPointChecks?: SupplyPointChecks | null
}

/** The kept counts' reads: `read(fn)` runs `fn` on the read replica when there is one (src/db/replica.ts). */
export interface ProgressReads {
  read<T>(fn: (repo: OperatorRepository) => Promise<T>): Promise<T>
}

/**
 * The operator's configuration rules. Every method is for an operator principal only.
 * `progress`: where `migrationProgress` reads its counts (by default `repo`, the primary).
 */
export function createOperatorService(
  repo: OperatorRepository,
  auth: AuthService,
  progress: ProgressReads = { read: (fn) => fn(repo) }
) {
  /** The supplier with this code; an organisation (`owner`, its name) sees only its own, as if others did not exist. */
  async function supplier(code: string, owner?: string): Promise<SupplierRecord> {
    const found = await repo.supplierByCode(code)
    if (!found || (owner !== undefined && found.organisation !== owner)) {
      throw fieldNotFound(CODE.does_not_exist, { supplier: code })
    }
    return found
  }

  return {
    createOrganisation(name: string, record: RecordChange) {
      const clean = checkName(name, 'name')
      return unique(`Organisation ${clean}`, () =>
        repo.insertOrganisation(clean, (tx) => record(tx, { type: 'organisation', id: clean }))
      )
    },

    async createApiKey(organisation: string, record: RecordChange) {
      const organisationId = await repo.organisationIdByName(organisation)
      if (!organisationId) throw notFound(`Organisation ${organisation}`)
      const key = newSecret('amk')
      const { id } = await repo.insertApiKey(organisationId, hashSecret(key), (tx, id) =>
        record(tx, { type: 'api_key', id })
      )
      return { id, key, organisation }
    },

    async revokeApiKey(id: string, record: RecordChange) {
      const revoked = UUID.test(id)
        ? await repo.revokeApiKey(id, (tx) => record(tx, { type: 'api_key', id }))
        : undefined
      if (!revoked) throw notFound(`API key ${id}`)
      auth.forgetKey(id)
      return { id: revoked.id, organisation: revoked.organisation, revokedAt: revoked.revokedAt }
    },

    async createImportSupplier(
      input: {
        code: string
        organisation: string
        documentRoot?: string | null
        status?: SupplierStatus | null
        sendMigrationEmails?: boolean | null
        maxConcurrentProcessing?: number | null
        supplyPointChecks?: SupplyPointChecks | null
      },
      record: RecordChange
    ) {
      if (!SUPPLIER_CODE.test(input.code)) throw invalid('code must match ^[A-Z0-9_]{1,32}$.')
      const organisationId = await repo.organisationIdByName(input.organisation)
      if (!organisationId) throw notFound(`Organisation ${input.organisation}`)
      const values = {
        code: input.code,
        organisationId,
        status: input.status ?? 'Ongoing',
        documentRoot: normaliseDocumentRoot(input.documentRoot ?? ''),
        sendMigrationEmails: input.sendMigrationEmails ?? false,
        maxConcurrentProcessing: checkLimit(input.maxConcurrentProcessing ?? null),
        supplyPointChecks: input.supplyPointChecks ?? 'NONE'
      }
      return unique(`Import supplier ${input.code}`, () =>
        repo.insertSupplier(values, OPERATOR, (tx) => record(tx, { type: 'import_supplier', id: input.code }))
      )
    },

    /** An omitted field stays as it is; an explicit null clears it (back to its default). */
    async updateImportSupplier(input: UpdateSupplierInput, record: RecordChange) {
      const changes: SupplierChanges = {}
      if (input.status === null) throw invalid('status cannot be cleared.')
      if (input.status !== undefined) changes.status = input.status
      if (input.documentRoot !== undefined) changes.documentRoot = normaliseDocumentRoot(input.documentRoot ?? '')
      if (input.sendMigrationEmails !== undefined) changes.sendMigrationEmails = input.sendMigrationEmails ?? false
      if (input.maxConcurrentProcessing !== undefined) {
        changes.maxConcurrentProcessing = checkLimit(input.maxConcurrentProcessing)
      }
      if (input.supplyPointChecks !== undefined) changes.supplyPointChecks = input.supplyPointChecks ?? 'NONE'
      const updated = await repo.updateSupplier(input.code, changes, OPERATOR, (tx, before) =>
        record(tx, { type: 'import_supplier', id: input.code }, changedFields(before, changes))
      )
      if (!updated) throw fieldNotFound(CODE.does_not_exist, { supplier: input.code })
      return updated
    },

    /** Every supplier for the operator; an organisation's own for an organisation (`owner`, its name). */
    listImportSuppliers: (owner?: string) => repo.listSuppliers(owner),

    listOrganisations: () => repo.listOrganisations(),

    async listApiKeys(organisation?: string) {
      if (organisation !== undefined && !(await repo.organisationIdByName(organisation))) {
        throw notFound(`Organisation ${organisation}`)
      }
      return repo.listApiKeys(organisation)
    },

    listOperationsTeams: () => repo.listTeams(),

    operationsTeamExists: async (name: string) => (await repo.teamIdByName(name)) !== undefined,

    createOperationsTeam(name: string, record: RecordChange) {
      const clean = checkName(name, 'name')
      return unique(`Operations team ${clean}`, () =>
        repo.insertTeam(clean, (tx) => record(tx, { type: 'operations_team', id: clean }))
      )
    },

    async skipImportProcess(importSupplierCode: string, externalAccountNumber: string, record: RecordChange) {
      const found = await supplier(importSupplierCode)
      if (
        externalAccountNumber.length === 0 ||
        externalAccountNumber !== externalAccountNumber.trim() ||
        Array.from(externalAccountNumber).length > 128
      ) {
        throw invalid('externalAccountNumber must be 1–128 characters without leading or trailing whitespace.')
      }
      const result = await repo.skipProcess(found.id, externalAccountNumber, OPERATOR, (tx) =>
        record(tx, { type: 'import_process', id: `${importSupplierCode}/${externalAccountNumber}` })
      )
      if (result.imported) throw invalid(`Account ${externalAccountNumber} is already imported and cannot be skipped.`)
      return {
        importSupplierCode,
        externalAccountNumber,
        state: 'SKIPPED' as const,
        serviceAccountNumber: result.serviceAccountNumber
      }
    },

    supplier,

    async importProcessEvents(importSupplierCode: string, externalAccountNumber: string, owner?: string) {
      const found = await supplier(importSupplierCode, owner)
      const events = await repo.processEvents(found.id, externalAccountNumber)
      if (!events) throw notFound(`Import process ${importSupplierCode} / ${externalAccountNumber}`)
      return events
    },

    async migrationProgress(importSupplierCode: string, owner?: string) {
      const supplierId = (await supplier(importSupplierCode, owner)).id
      return progress.read((r) => r.progress(supplierId))
    }
  }
}

export type OperatorService = ReturnType<typeof createOperatorService>
