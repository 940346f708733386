import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Test } from 'tap'

export type Fault = 'throttle' | 'fail' | 'drop' | 'lose-answer' | 'entries-unavailable'

/**
 * A real HTTP proxy on loopback in front of the real server. `decide` picks, per request, whether
 * to pass it on, answer 429 (Retry-After: 1) or 500 without passing it on, drop the connection,
 * or pass it on and then answer 502 instead of the real answer (the work is done, the answer lost);
 * `entries-unavailable` answers a batch 200 without passing it on, every entry failed 503
 * service_unavailable (as a batch that lost the database answers; nothing stored).
 * `seen` counts the requests by what was done to them, `paths` by path.
 */
export async function faultyProxy(
  t: Test,
  target: string,
  decide: (n: number, req: IncomingMessage) => Fault | undefined = () => undefined
) {
  const { hostname, port } = new URL(target)
  const seen: Record<Fault | 'passed', number> = {
    throttle: 0,
    fail: 0,
    drop: 0,
    'lose-answer': 0,
    'entries-unavailable': 0,
    passed: 0
  }
  const paths: Record<string, number> = {}
  let n = 0
  const proxy = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '').split('?')[0]!
    paths[path] = (paths[path] ?? 0) + 1
    const fault = decide(++n, req)
    seen[fault ?? 'passed']++
    const error = (status: number, code: string, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers })
      res.end(JSON.stringify({ detail: 'Injected by the test proxy.', code, errors: [] }))
    }
    if (fault === 'throttle') return error(429, 'throttled', { 'retry-after': '1' })
    if (fault === 'fail') return error(500, 'server_error')
    if (fault === 'drop') return req.socket.destroy()
    if (fault === 'entries-unavailable') {
      let text = ''
      req.on('data', (d: Buffer) => (text += d.toString()))
      req.on('end', () => {
        const body = JSON.parse(text) as { accounts?: Array<{ account?: { external_account_number?: string } }> }
        const accounts = body.accounts ?? []
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(
          JSON.stringify({
            results: accounts.map((a) => ({
              external_account_number: a.account?.external_account_number ?? null,
              outcome: 'failed',
              service_account_number: null,
              step: 'stage',
              status: 503,
              code: 'service_unavailable',
              errors: []
            })),
            counts: { created: 0, already_imported: 0, would_create: 0, failed: accounts.length }
          })
        )
      })
      return
    }
    const upstream = httpRequest(
      { hostname, port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        if (fault === 'lose-answer') {
          answer.resume()
          answer.on('end', () => error(502, 'http_502'))
          return
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
      }
    )
    upstream.on('error', () => res.destroy())
    req.pipe(upstream)
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        proxy.closeAllConnections()
        proxy.close(() => resolve())
      })
  )
  return { url: `http://127.0.0.1:${(proxy.address() as { port: number }).port}`, seen, paths }
}
