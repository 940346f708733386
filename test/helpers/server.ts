import { spawn, type ChildProcess } from 'node:child_process'
import type { FastifyInstance } from 'fastify'
import { projectRoot } from '../../src/paths.js'
import { TEST_OPERATOR_KEY, TEST_TOKEN_SECRET } from './app.js'
import { nodeArgs } from './entry.js'
import { tempDir } from './temp-dir.js'
import { waitFor } from './wait.js'

export interface Running {
  child: ChildProcess
  url: string
  output: () => string
  exit: Promise<number | null>
}

const quoted = (arg: string) => `'${arg.replaceAll("'", "'\\''")}'`

/**
 * Spawns `src/server.ts` with exactly the given environment (plus PATH). `terminal`: its standard
 * output is a pseudo-terminal (util-linux `script`), as when a person starts it.
 */
export function spawnServer(env: Record<string, string>, options: { terminal?: boolean } = {}) {
  const [command, args] =
    options.terminal === true
      ? ([
          'script',
          ['-qfec', [process.execPath, ...nodeArgs('src/server.ts')].map(quoted).join(' '), '/dev/null']
        ] as const)
      : ([process.execPath, nodeArgs('src/server.ts')] as const)
  const child = spawn(command, args, {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString()
  })
  child.stderr!.on('data', (d: Buffer) => {
    out += d.toString()
  })
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  return { child, output: () => out, exit }
}

/** Spawns a server and waits until it listens. */
export async function startServer(env: Record<string, string>, options: { terminal?: boolean } = {}): Promise<Running> {
  const s = spawnServer(env, options)
  // A first start on a new embedded database takes 10 s alone on two cores (PGlite's initdb about
  // 5 of them, the migrations under 1); beside the rest of the suite it once took more than 60.
  const listening = () => {
    if (s.child.exitCode !== null) throw new Error('server exited: ' + s.output())
    return /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(s.output())?.[1]
  }
  const url = await waitFor('the server listens', listening, {
    timeoutMs: 150_000,
    intervalMs: 100,
    seen: () => s.output()
  }).catch((err: Error) => {
    if (s.child.exitCode === null) s.child.kill('SIGKILL')
    throw err
  })
  return { ...s, url }
}

/**
 * A server process of the test's own on `DATABASE_URL` (and the rest of `env`), with the suite's
 * secrets and a data folder of its own; SIGKILLed at teardown if still running.
 */
export async function testServer(t: { teardown(fn: () => unknown): void }, env: Record<string, string>) {
  const server = await startServer({
    DATA_DIR: tempDir(t),
    TOKEN_SECRET: TEST_TOKEN_SECRET,
    OPERATOR_API_KEY: TEST_OPERATOR_KEY,
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    ...env
  })
  t.teardown(async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL')
    await server.exit
  })
  return server
}

/** Runs a server that must refuse to start; returns its exit code and output. */
export async function refusedStart(env: Record<string, string>) {
  const s = spawnServer(env)
  const timer = setTimeout(() => s.child.kill('SIGKILL'), 30_000)
  const code = await s.exit
  clearTimeout(timer)
  return { code, output: s.output().trim() }
}

/** `n` server processes on one PostgreSQL database (`url`), each with a DATA_DIR of its own; killed at teardown. */
export async function startServers(
  t: { teardown(fn: () => unknown): void },
  url: string,
  n: number,
  env: Record<string, string> = {}
): Promise<Running[]> {
  const { mkdtempSync, rmSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const { join } = await import('node:path')
  const { TEST_OPERATOR_KEY, TEST_TOKEN_SECRET } = await import('./app.js')
  const dir = mkdtempSync(join(tmpdir(), 'amis-servers-'))
  const servers = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      startServer({
        DATABASE_URL: url,
        DATA_DIR: join(dir, String(i)),
        TOKEN_SECRET: TEST_TOKEN_SECRET,
        OPERATOR_API_KEY: TEST_OPERATOR_KEY,
        NODE_ENV: 'test',
        ...env
      })
    )
  )
  t.teardown(async () => {
    for (const s of servers) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL')
    await Promise.all(servers.map((s) => s.exit))
    rmSync(dir, { recursive: true, force: true })
  })
  return servers
}

/** What `inject` callers (gql, createTenant, asOperator) need, over HTTP to a server process. */
export function remote(base: string): FastifyInstance {
  return {
    async inject(opts: { method?: string; url: string; headers?: Record<string, string>; payload?: unknown }) {
      const body = opts.payload === undefined ? undefined : JSON.stringify(opts.payload)
      const res = await fetch(base + opts.url, {
        method: opts.method ?? 'GET',
        headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...opts.headers },
        body
      })
      const text = await res.text()
      return { statusCode: res.status, body: text, json: () => JSON.parse(text) }
    }
  } as unknown as FastifyInstance
}
