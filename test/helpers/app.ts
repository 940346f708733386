import { PassThrough } from 'node:stream'
import type { FastifyInstance, RouteOptions } from 'fastify'
import { buildApp } from '../../src/app.js'
import { loadConfig, type Config } from '../../src/config.js'
import type { Database } from '../../src/db/index.js'
import { freshDatabase, testDatabaseUrl } from './database.js'

export const TEST_TOKEN_SECRET = 'test-secret-test-secret-test-secret-0123456789'
export const TEST_OPERATOR_KEY = 'amo_test-operator-key-0123456789abcdefghijklmnop'

/** Configuration as `loadConfig` makes it from an environment, with test defaults. */
export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    NODE_ENV: 'test',
    TOKEN_SECRET: TEST_TOKEN_SECRET,
    OPERATOR_API_KEY: TEST_OPERATOR_KEY,
    LOG_LEVEL: 'silent',
    TOKEN_RATE_LIMIT_PER_MINUTE: '100000',
    // A server on PostgreSQL has DATABASE_URL, and so its default pool size; the tests hand the
    // app its database instead.
    ...(testDatabaseUrl ? { DATABASE_POOL_SIZE: '10' } : {}),
    ...env
  })
}

interface Teardown {
  teardown(fn: () => unknown): void
}

export interface TestApp {
  app: FastifyInstance
  database: Database
  config: Config
  /** Everything the app logged (when `captureLogs` was asked for). */
  logs(): string
  /** Lines given to `announce` (a generated operator key). */
  announced: string[]
}

/**
 * The real app (`buildApp`) on a fresh database of its own, closed and dropped at teardown.
 * Pass `database` to share one database between several apps (closed by its first app).
 */
export async function buildTestApp(
  t: Teardown,
  options: {
    env?: Record<string, string>
    captureLogs?: boolean
    database?: Database
    onRoute?: (route: RouteOptions) => void
  } = {}
): Promise<TestApp> {
  const fresh = options.database ? undefined : await freshDatabase()
  const database = options.database ?? fresh!.database
  const config = testConfig({ ...(options.captureLogs ? { LOG_LEVEL: 'trace' } : {}), ...options.env })
  let logged = ''
  const logStream = new PassThrough()
  logStream.on('data', (chunk: Buffer) => {
    logged += chunk.toString('utf8')
  })
  const announced: string[] = []
  const app = await buildApp(config, {
    database: options.database ? sharedHandle(database) : database,
    logStream,
    announce: (m) => announced.push(m),
    ...(options.onRoute ? { onRoute: options.onRoute } : {})
  })
  t.teardown(async () => {
    await app.close()
    await fresh?.drop()
  })
  return { app, database, config, logs: () => logged, announced }
}

/** The same database for a second app, which must not close it. */
function sharedHandle(database: Database): Database {
  return { ...database, close: async () => {} }
}

/**
 * The app on a fresh database that spawned server processes will share (its `url` is given on
 * PostgreSQL); the database is closed and dropped at teardown.
 */
export async function buildSharedTestApp(t: Teardown): Promise<TestApp & { url: string | undefined }> {
  const fresh = await freshDatabase()
  const testApp = await buildTestApp(t, { database: fresh.database })
  t.teardown(async () => {
    await testApp.database.close()
    await fresh.drop()
  })
  return { ...testApp, url: fresh.url }
}
