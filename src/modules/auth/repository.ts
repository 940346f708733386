import { and, eq, isNull, sql } from 'drizzle-orm'
import { apiKeys, organisations, refreshTokens, serviceSettings } from '../../../drizzle/schema/index.js'
import { rowsOf, type Db, type Tx } from '../../db/index.js'

export interface KeyRecord {
  apiKeyId: string
  organisationId: string
  organisationName: string
  revoked: boolean
}

export interface ConsumedRefreshToken {
  apiKeyId: string | null
  operator: boolean
  expiresAt: Date
}

export function createAuthRepository(db: Db) {
  const keyColumns = {
    apiKeyId: apiKeys.id,
    organisationId: organisations.id,
    organisationName: organisations.name,
    revokedAt: apiKeys.revokedAt
  }
  const toKeyRecord = (row: {
    apiKeyId: string
    organisationId: string
    organisationName: string
    revokedAt: Date | null
  }): KeyRecord => ({
    apiKeyId: row.apiKeyId,
    organisationId: row.organisationId,
    organisationName: row.organisationName,
    revoked: row.revokedAt !== null
  })

  return {
    /**
     * The key of this hash, and a refresh token for it when it is not revoked, in one statement: a
     * sign-in then waits for the database once (on the embedded database, each statement waits
     * for the transaction in progress).
     */
    async keyWithRefreshToken(
      keyHash: string,
      refresh: { tokenHash: string; expiresAt: Date },
      record: (tx: Tx, key: KeyRecord) => Promise<void>
    ): Promise<KeyRecord | undefined> {
      return db.transaction(async (tx) => {
        const [row] = rowsOf<{
          api_key_id: string
          organisation_id: string
          organisation_name: string
          revoked: boolean
        }>(
          await tx.execute(sql`with key as (
            select k.id, k.organisation_id, o.name, k.revoked_at is not null as revoked
            from api_keys k join organisations o on o.id = k.organisation_id where k.key_hash = ${keyHash}),
          issued as (
            insert into refresh_tokens (token_hash, api_key_id, operator, expires_at)
            select ${refresh.tokenHash}, id, false, ${refresh.expiresAt.toISOString()}::timestamptz from key where not revoked)
          select id as api_key_id, organisation_id, name as organisation_name, revoked from key`)
        )
        const key = row && {
          apiKeyId: row.api_key_id,
          organisationId: row.organisation_id,
          organisationName: row.organisation_name,
          revoked: row.revoked
        }
        // The exchange's audit record, in the transaction that stored its refresh token.
        if (key && !key.revoked) await record(tx, key)
        return key
      })
    },

    async findKeyById(apiKeyId: string): Promise<KeyRecord | undefined> {
      const [row] = await db
        .select(keyColumns)
        .from(apiKeys)
        .innerJoin(organisations, eq(organisations.id, apiKeys.organisationId))
        .where(eq(apiKeys.id, apiKeyId))
      return row && toKeyRecord(row)
    },

    /** Stores a refresh token; `record`, when given, writes an audit record in the same transaction. */
    async insertRefreshToken(
      tokenHash: string,
      apiKeyId: string | null,
      expiresAt: Date,
      record?: (tx: Tx) => Promise<void>
    ): Promise<void> {
      const values = { tokenHash, apiKeyId, operator: apiKeyId === null, expiresAt }
      if (record === undefined) {
        await db.insert(refreshTokens).values(values)
        return
      }
      await db.transaction(async (tx) => {
        await tx.insert(refreshTokens).values(values)
        await record(tx)
      })
    },

    /** Marks the token used, atomically: of two concurrent uses exactly one gets the row. */
    async consumeRefreshToken(tokenHash: string): Promise<ConsumedRefreshToken | undefined> {
      const [row] = await db
        .update(refreshTokens)
        .set({ usedAt: sql`now()` })
        .where(and(eq(refreshTokens.tokenHash, tokenHash), isNull(refreshTokens.usedAt)))
        .returning({
          apiKeyId: refreshTokens.apiKeyId,
          operator: refreshTokens.operator,
          expiresAt: refreshTokens.expiresAt
        })
      return row
    },

    async getSetting(key: string): Promise<string | undefined> {
      const [row] = await db
        .select({ value: serviceSettings.value })
        .from(serviceSettings)
        .where(eq(serviceSettings.key, key))
      return row?.value
    },

    /** Stores the value unless the key exists; true when this call stored it. */
    async insertSettingOnce(key: string, value: string): Promise<boolean> {
      const rows = await db
        .insert(serviceSettings)
        .values({ key, value })
        .onConflictDoNothing()
        .returning({ key: serviceSettings.key })
      return rows.length === 1
    }
  }
}

export type AuthRepository = ReturnType<typeof createAuthRepository>
