import { and, desc, eq, gte, lt, lte, or, sql, type SQL } from 'drizzle-orm'
import {
  apiKeys,
  auditEvents,
  importJobs,
  importProcesses,
  importSuppliers,
  operationsTeams,
  organisations,
  webhookDeliveries,
  webhookEndpoints
} from '../../../drizzle/schema/index.js'
import { rowsOf, type Db, type Tx } from '../../db/index.js'

export type AuditEventRow = typeof auditEvents.$inferSelect
export type NewAuditEvent = Omit<typeof auditEvents.$inferInsert, 'id' | 'at'>

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
/** A webhook delivery's id as the API gives it. */
const DELIVERY_ID = /^[1-9][0-9]{0,15}$/

export interface AuditFilter {
  /** Records concerning this organisation (its id): as actor, or as the owner of the target. */
  organisationId?: string
  action?: string
  since?: Date
  until?: Date
  /** Records older than this id (the previous page's last). */
  before?: number
  limit: number
}

/** SQL of the audit trail. */
export function createAuditRepository(db: Db) {
  return {
    /** Writes one record, at the current second, with `executor` (a transaction, for a change's record). */
    async insert(executor: Db | Tx, row: NewAuditEvent): Promise<void> {
      await executor.insert(auditEvents).values({ ...row, at: sql`date_trunc('second', clock_timestamp())` })
    },

    /**
     * The organisation a target belongs to (its id, null for an operator-only thing such as an
     * operations team), or undefined when the target does not exist.
     */
    async ownerOf(executor: Db | Tx, type: string, id: string): Promise<{ organisationId: string | null } | undefined> {
      switch (type) {
        case 'organisation': {
          const [row] = await executor
            .select({ organisationId: organisations.id })
            .from(organisations)
            .where(eq(organisations.name, id))
          return row
        }
        case 'api_key': {
          if (!UUID.test(id)) return undefined
          const [row] = await executor
            .select({ organisationId: apiKeys.organisationId })
            .from(apiKeys)
            .where(eq(apiKeys.id, id))
          return row
        }
        case 'import_supplier': {
          const [row] = await executor
            .select({ organisationId: importSuppliers.organisationId })
            .from(importSuppliers)
            .where(eq(importSuppliers.code, id))
          return row
        }
        case 'operations_team': {
          const [row] = await executor
            .select({ id: operationsTeams.id })
            .from(operationsTeams)
            .where(eq(operationsTeams.name, id))
            .limit(1)
          return row && { organisationId: null }
        }
        case 'import_process': {
          const slash = id.indexOf('/')
          if (slash < 0) return undefined
          const [row] = await executor
            .select({ organisationId: importSuppliers.organisationId })
            .from(importProcesses)
            .innerJoin(importSuppliers, eq(importSuppliers.id, importProcesses.supplierId))
            .where(
              and(
                eq(importSuppliers.code, id.slice(0, slash)),
                eq(importProcesses.externalAccountNumber, id.slice(slash + 1))
              )
            )
          return row
        }
        case 'webhook_endpoint': {
          if (!UUID.test(id)) return undefined
          const [row] = await executor
            .select({ organisationId: webhookEndpoints.organisationId })
            .from(webhookEndpoints)
            .where(eq(webhookEndpoints.id, id))
          return row
        }
        case 'webhook_delivery': {
          if (!DELIVERY_ID.test(id)) return undefined
          const [row] = await executor
            .select({ organisationId: webhookEndpoints.organisationId })
            .from(webhookDeliveries)
            .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookDeliveries.endpointId))
            .where(eq(webhookDeliveries.id, Number(id)))
          return row
        }
        case 'import_job': {
          if (!UUID.test(id)) return undefined
          const [row] = await executor
            .select({ organisationId: importJobs.organisationId })
            .from(importJobs)
            .where(eq(importJobs.id, id))
          return row
        }
        default:
          return undefined
      }
    },

    async organisationIdByName(name: string): Promise<string | undefined> {
      const [row] = await db.select({ id: organisations.id }).from(organisations).where(eq(organisations.name, name))
      return row?.id
    },

    /**
     * Records newest first. A record concerns an organisation when its actor is that organisation
     * or its target belongs to it (the organisation itself, its API keys, import suppliers and their
     * processes, webhook endpoints and deliveries, import jobs): the target's owner is kept with the
     * record when it is written (`ownerOf`), so a target removed since (an endpoint deleted, a
     * delivery purged) still tells whose it was.
     */
    async list(filter: AuditFilter): Promise<AuditEventRow[]> {
      const conditions: SQL[] = []
      if (filter.organisationId !== undefined) {
        conditions.push(
          or(
            eq(auditEvents.actorOrganisationId, filter.organisationId),
            eq(auditEvents.targetOrganisationId, filter.organisationId)
          )!
        )
      }
      if (filter.action !== undefined) conditions.push(eq(auditEvents.action, filter.action))
      if (filter.since !== undefined) conditions.push(gte(auditEvents.at, filter.since))
      if (filter.until !== undefined) conditions.push(lte(auditEvents.at, filter.until))
      if (filter.before !== undefined) conditions.push(lt(auditEvents.id, filter.before))
      return db
        .select()
        .from(auditEvents)
        .where(and(...conditions))
        .orderBy(desc(auditEvents.id))
        .limit(filter.limit)
    },

    /** Removes up to `limit` records older than `cutoff`; returns how many. */
    async removeOlderThan(cutoff: Date, limit: number): Promise<number> {
      return rowsOf(
        await db.execute(sql`delete from ${auditEvents} where id in (select id from ${auditEvents}
          where at < ${cutoff.toISOString()}::timestamptz order by id limit ${limit}) returning id`)
      ).length
    }
  }
}

export type AuditRepository = ReturnType<typeof createAuditRepository>
