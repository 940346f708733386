import { and, eq, isNull, sql } from 'drizzle-orm'
import { apiKeys, organisations, refreshTokens, serviceSettings } from '../../../drizzle/schema/index.js'
import type { Db } from '../../db/index.js'

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
    async findKeyByHash(keyHash: string): Promise<KeyRecord | undefined> {
      const [row] = await db
        .select(keyColumns)
        .from(apiKeys)
        .innerJoin(organisations, eq(organisations.id, apiKeys.organisationId))
        .where(eq(apiKeys.keyHash, keyHash))
      return row && toKeyRecord(row)
    },

    async findKeyById(apiKeyId: string): Promise<KeyRecord | undefined> {
      const [row] = await db
        .select(keyColumns)
        .from(apiKeys)
        .innerJoin(organisations, eq(organisations.id, apiKeys.organisationId))
        .where(eq(apiKeys.id, apiKeyId))
      return row && toKeyRecord(row)
    },

    async insertRefreshToken(tokenHash: string, apiKeyId: string | null, expiresAt: Date): Promise<void> {
      await db.insert(refreshTokens).values({ tokenHash, apiKeyId, operator: apiKeyId === null, expiresAt })
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
