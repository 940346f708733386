import type { AuditAction, AuditChanges, AuditEvent, AuditTarget, AuditTargetType } from '../../../schemas/audit.js'
import type { Db, Tx } from '../../db/index.js'
import { formatDateTime } from '../../format.js'
import type { Principal } from '../auth/service.js'
import type { AuditFilter, AuditRepository } from './repository.js'

export type { AuditChanges, AuditEvent, AuditTarget, AuditTargetType } from '../../../schemas/audit.js'

/** Who asked, from where, in which request: the same for every record of one request. */
export interface AuditRequest {
  principal: Principal | undefined
  ip: string
  requestId: string
}

/** Writes a succeeded action's record inside the transaction `tx` of its change. */
export type RecordChange = (tx: Tx, target: AuditTarget | null, changes?: AuditChanges | null) => Promise<void>

function actorOf(principal: Principal | undefined) {
  if (principal === undefined) {
    return { actorKind: 'anonymous' as const, actorOrganisation: null, actorApiKeyId: null, actorOrganisationId: null }
  }
  if (principal.kind === 'operator') {
    return { actorKind: 'operator' as const, actorOrganisation: null, actorApiKeyId: null, actorOrganisationId: null }
  }
  return {
    actorKind: 'organisation' as const,
    actorOrganisation: principal.organisationName,
    actorApiKeyId: principal.apiKeyId,
    actorOrganisationId: principal.organisationId
  }
}

/**
 * The audit trail: the one place records are written. A succeeded action's record goes into the
 * transaction of its change (`recorder`); a refusal's is written on its own (`refused`).
 * `onWritten` is told of each record once it is kept.
 */
export function createAuditLog(
  db: Db,
  repo: AuditRepository,
  onWritten: (action: string, outcome: 'succeeded' | 'refused') => void = () => {}
) {
  return {
    /** The writer of `action`'s record for one request, to be called in the change's transaction. */
    recorder(request: AuditRequest, action: AuditAction): RecordChange {
      return async function recordChange(tx, target, changes = null) {
        const owner = target === null ? undefined : await repo.ownerOf(tx, target.type, target.id)
        await repo.insert(tx, {
          action,
          outcome: 'succeeded',
          code: null,
          ...actorOf(request.principal),
          targetType: target?.type ?? null,
          targetId: target?.id ?? null,
          targetOrganisationId: owner?.organisationId ?? null,
          changes,
          ip: request.ip,
          requestId: request.requestId
        })
      }
    },

    /** Tells the counters of a succeeded action's record, once its transaction is committed. */
    committed(action: AuditAction): void {
      onWritten(action, 'succeeded')
    },

    /**
     * Records a refusal with its error code. The target is kept only when it exists and, for an
     * organisation's caller, belongs to that organisation: otherwise the record concerns only its actor.
     */
    async refused(request: AuditRequest, action: AuditAction, code: string, target: AuditTarget | null): Promise<void> {
      const actor = actorOf(request.principal)
      const owner = target === null ? undefined : await repo.ownerOf(db, target.type, target.id)
      const shown =
        owner !== undefined &&
        (actor.actorKind !== 'organisation' || owner.organisationId === actor.actorOrganisationId)
      await repo.insert(db, {
        action,
        outcome: 'refused',
        code,
        ...actor,
        targetType: shown ? target!.type : null,
        targetId: shown ? target!.id : null,
        targetOrganisationId: shown ? owner.organisationId : null,
        changes: null,
        ip: request.ip,
        requestId: request.requestId
      })
      onWritten(action, 'refused')
    },

    /** Records newest first; `showIp` false blanks the address (organisations' readers). */
    async list(filter: AuditFilter, showIp: boolean): Promise<AuditEvent[]> {
      const rows = await repo.list(filter)
      return rows.map((r) => ({
        id: String(r.id),
        at: formatDateTime(r.at),
        action: r.action,
        outcome: r.outcome,
        code: r.code,
        actor: { kind: r.actorKind, organisation: r.actorOrganisation, apiKeyId: r.actorApiKeyId },
        target:
          r.targetType === null || r.targetId === null
            ? null
            : { type: r.targetType as AuditTargetType, id: r.targetId },
        changes: (r.changes as AuditChanges | null) ?? null,
        ip: showIp ? r.ip : null,
        requestId: r.requestId
      }))
    },

    organisationIdByName: (name: string) => repo.organisationIdByName(name),

    /** Removes records older than `days` days, in batches; returns how many. */
    async removeOlderThan(days: number, now: Date = new Date(), batchSize = 5000): Promise<number> {
      const cutoff = new Date(now.getTime() - days * 86_400_000)
      let total = 0
      for (;;) {
        const n = await repo.removeOlderThan(cutoff, batchSize)
        total += n
        if (n < batchSize) return total
      }
    }
  }
}

export type AuditLog = ReturnType<typeof createAuditLog>
