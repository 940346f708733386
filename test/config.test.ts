import t from 'tap'
import { ConfigError, loadConfig } from '../src/config.js'

t.test('defaults', async (t) => {
  const c = loadConfig({})
  t.same(
    {
      host: c.host,
      port: c.port,
      databaseUrl: c.databaseUrl,
      dataDir: c.dataDir,
      production: c.production,
      tokenTtlSeconds: c.tokenTtlSeconds,
      documentBucket: c.documentBucket,
      bodyLimitBytes: c.bodyLimitBytes,
      paymentVendors: c.paymentVendors,
      smtpUrl: c.smtpUrl,
      tokenRateLimitPerMinute: c.tokenRateLimitPerMinute,
      orgRateLimitPerMinute: c.orgRateLimitPerMinute,
      logLevel: c.logLevel
    },
    {
      host: '127.0.0.1',
      port: 3000,
      databaseUrl: undefined,
      dataDir: './data',
      production: false,
      tokenTtlSeconds: 3600,
      documentBucket: 'migration-documents',
      bodyLimitBytes: 10485760,
      paymentVendors: {},
      smtpUrl: undefined,
      tokenRateLimitPerMinute: 20,
      orgRateLimitPerMinute: 0,
      logLevel: 'info'
    }
  )
  t.equal(c.refreshTokenTtlSeconds, 7 * 86400)
})

t.test('values are read and converted; blanks count as unset', async (t) => {
  const c = loadConfig({
    PORT: '8080',
    DATABASE_URL: 'postgres://u@h:5432/d',
    ORG_RATE_LIMIT_PER_MINUTE: '600',
    DATA_DIR: '  ',
    LOG_LEVEL: 'warn'
  })
  t.equal(c.port, 8080)
  t.equal(c.databaseUrl, 'postgres://u@h:5432/d')
  t.equal(c.orgRateLimitPerMinute, 600)
  t.equal(c.dataDir, './data')
  t.equal(c.logLevel, 'warn')
})

t.test('LOG_FORMAT: readable at a terminal, JSON elsewhere, unless set', async (t) => {
  t.equal(loadConfig({}).logFormat, 'json', 'not a terminal (a service manager, a container, a file)')
  t.equal(loadConfig({}, { terminal: true }).logFormat, 'pretty', 'a person at a terminal')
  t.equal(loadConfig({ LOG_FORMAT: 'json' }, { terminal: true }).logFormat, 'json')
  t.equal(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat, 'pretty')
  t.throws(() => loadConfig({ LOG_FORMAT: 'text' }), { name: 'ConfigError', message: /LOG_FORMAT/ })
})

t.test('DATABASE_PIPELINE: on by default, true or false', async (t) => {
  t.equal(loadConfig({}).databasePipeline, true)
  t.equal(loadConfig({ DATABASE_PIPELINE: 'false' }).databasePipeline, false)
  t.throws(() => loadConfig({ DATABASE_PIPELINE: 'off' }), { name: 'ConfigError', message: /DATABASE_PIPELINE/ })
})

t.test('DATABASE_READ_URL: unset by default, a postgres URL, only with DATABASE_URL', async (t) => {
  t.equal(loadConfig({}).databaseReadUrl, undefined)
  const primary = 'postgres://u@h1:5432/d'
  const replica = 'postgres://u:secret@h2:5432/d'
  t.equal(loadConfig({ DATABASE_URL: primary, DATABASE_READ_URL: replica }).databaseReadUrl, replica)
  t.equal(loadConfig({ DATABASE_URL: primary, DATABASE_READ_URL: '  ' }).databaseReadUrl, undefined, 'blank is unset')
  t.throws(() => loadConfig({ DATABASE_READ_URL: replica }), {
    name: 'ConfigError',
    message: 'invalid configuration: DATABASE_READ_URL needs DATABASE_URL (the embedded database has no replica)'
  })
  const bad = t.throws(() => loadConfig({ DATABASE_URL: primary, DATABASE_READ_URL: 'mysql://u:secret@h2/d' })) as Error
  t.match(bad.message, /DATABASE_READ_URL is not in the form it takes/)
  t.notMatch(bad.message, /secret/, 'the URL is not echoed')
})

t.test('DATABASE_PREPARE: on by default, true or false', async (t) => {
  t.equal(loadConfig({}).databasePrepare, true)
  t.equal(loadConfig({ DATABASE_PREPARE: 'false' }).databasePrepare, false)
  t.equal(loadConfig({ DATABASE_PREPARE: 'true' }).databasePrepare, true)
  t.throws(() => loadConfig({ DATABASE_PREPARE: 'no' }), {
    name: 'ConfigError',
    message: /^invalid configuration: DATABASE_PREPARE must be true or false \(given: "no"\)$/
  })
})

t.test('PAYMENT_VENDORS pairs', async (t) => {
  t.same(
    loadConfig({ PAYMENT_VENDORS: 'STRIPE=https://api.example.test/v1/, ADYEN=http://127.0.0.1:9999' }).paymentVendors,
    {
      STRIPE: 'https://api.example.test/v1',
      ADYEN: 'http://127.0.0.1:9999'
    }
  )
  for (const bad of ['STRIPE', 'stripe=https://x', 'STRIPE=ftp://x', 'A=https://x,A=https://y']) {
    t.throws(() => loadConfig({ PAYMENT_VENDORS: bad }), ConfigError, bad)
  }
})

t.test(
  "the heap's growth past its live data: twice it unless set (1.5 times on the embedded database); 0 leaves it to V8",
  async (t) => {
    t.equal(loadConfig({ DATABASE_URL: 'postgres://localhost/x' }).heapGrowthPercent, 100)
    t.equal(loadConfig({}).heapGrowthPercent, 50)
    t.equal(loadConfig({ HEAP_GROWTH_PERCENT: '0' }).heapGrowthPercent, 0)
    t.equal(loadConfig({ HEAP_GROWTH_PERCENT: '40' }).heapGrowthPercent, 40)
    t.throws(() => loadConfig({ HEAP_GROWTH_PERCENT: '1001' }), ConfigError)
  }
)

t.test('invalid values give one line naming the variable', async (t) => {
  const cases: Record<string, string>[] = [
    { PORT: 'abc' },
    { PORT: '70000' },
    { DATABASE_URL: 'mysql://x' },
    { TOKEN_SECRET: 'short' },
    { NODE_ENV: 'staging' },
    { BODY_LIMIT_BYTES: '-1' },
    { LOG_LEVEL: 'loud' },
    { TOKEN_TTL_SECONDS: '0' },
    { SMTP_URL: 'http://x' },
    { HEAP_GROWTH_PERCENT: '-5' }
  ]
  for (const env of cases) {
    const name = Object.keys(env)[0]!
    try {
      loadConfig(env)
      t.fail(`${name} should be refused`)
    } catch (err) {
      t.type(err, ConfigError)
      t.match((err as Error).message, new RegExp(`^invalid configuration: .*${name}`), name)
      t.notMatch((err as Error).message, /\n/)
      // Plain words for a person starting the service, never the validator's.
      t.notMatch(
        (err as Error).message,
        /must be (integer|boolean|string|<=|>=|equal)|must match|must NOT|anyOf|schema/,
        name
      )
    }
  }
})

t.test('a bad setting says what it may be, and never echoes what may be a password', async (t) => {
  const message = (env: Record<string, string>) => {
    try {
      loadConfig(env)
      return ''
    } catch (err) {
      return (err as Error).message
    }
  }
  t.equal(
    message({ PORT: '70000' }),
    'invalid configuration: PORT must be a whole number from 0 to 65535 (given: 70000)'
  )
  t.equal(
    message({ LOG_LEVEL: 'loud' }),
    'invalid configuration: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (given: "loud")'
  )
  t.equal(
    message({ METRICS_TOKEN: 'short' }),
    'invalid configuration: METRICS_TOKEN must be at least 32 characters long'
  )
  t.notMatch(message({ SMTP_URL: 'http://user:secret@x' }), /secret/)
})

t.test('production needs TOKEN_SECRET and OPERATOR_API_KEY', async (t) => {
  t.throws(() => loadConfig({ NODE_ENV: 'production', OPERATOR_API_KEY: 'k'.repeat(40) }), /TOKEN_SECRET is required/)
  t.throws(() => loadConfig({ NODE_ENV: 'production', TOKEN_SECRET: 's'.repeat(40) }), /OPERATOR_API_KEY is required/)
  t.equal(
    loadConfig({ NODE_ENV: 'production', TOKEN_SECRET: 's'.repeat(40), OPERATOR_API_KEY: 'k'.repeat(40) }).production,
    true
  )
})

t.test('timeouts for slow clients: defaults, and headers never longer than the whole request', async (t) => {
  const c = loadConfig({})
  t.same([c.headersTimeoutSeconds, c.requestTimeoutSeconds, c.keepAliveTimeoutSeconds], [15, 120, 5])
  t.throws(
    () => loadConfig({ HEADERS_TIMEOUT_SECONDS: '30', REQUEST_TIMEOUT_SECONDS: '20' }),
    /HEADERS_TIMEOUT_SECONDS must not be longer than REQUEST_TIMEOUT_SECONDS/
  )
  t.throws(() => loadConfig({ KEEP_ALIVE_TIMEOUT_SECONDS: '0' }), /KEEP_ALIVE_TIMEOUT_SECONDS/)
})

t.test('STAGED_DATA_RETENTION_DAYS: default 30, 0 allowed, whole days up to 3650', async (t) => {
  t.equal(loadConfig({}).stagedDataRetentionDays, 30)
  t.equal(loadConfig({ STAGED_DATA_RETENTION_DAYS: '0' }).stagedDataRetentionDays, 0)
  t.equal(loadConfig({ STAGED_DATA_RETENTION_DAYS: '3650' }).stagedDataRetentionDays, 3650)
  for (const bad of ['-1', '1.5', 'thirty', '3651']) {
    t.throws(
      () => loadConfig({ STAGED_DATA_RETENTION_DAYS: bad }),
      /^invalid configuration: .*STAGED_DATA_RETENTION_DAYS/,
      bad
    )
  }
})
