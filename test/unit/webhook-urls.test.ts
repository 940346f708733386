import t from 'tap'
import { addressProblem, ipLiteral, webhookUrlProblem } from '../../src/rules/webhook-urls.js'

/** Where a webhook may go: the URL's form, and every address its host resolves to. */

t.test('addresses: only global unicast is public', async (t) => {
  const refused: Array<[string, string]> = [
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.1.2.3', 'private network'],
    ['172.16.0.1', 'private network'],
    ['192.168.1.1', 'private network'],
    ['169.254.169.254', 'link-local'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['0.0.0.0', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['224.0.0.1', 'multicast'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'link-local'],
    ['fd00::1', 'unique local'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:10.0.0.1', 'private network'],
    ['::ffff:a9fe:a9fe', 'link-local'],
    ['64:ff9b::a00:1', 'NAT64'],
    ['2002:a00:1::1', '6to4']
  ]
  for (const [address, range] of refused) {
    t.match(addressProblem(address, false), `(${range})`, `${address} is refused as ${range}`)
    t.equal(addressProblem(address, true), undefined, `${address} is allowed with WEBHOOK_ALLOW_PRIVATE`)
  }
  for (const address of ['8.8.8.8', '93.184.216.34', '2606:4700::1111', '2a00:1450:4009:81f::200e']) {
    t.equal(addressProblem(address, false), undefined, `${address} is public`)
  }
})

t.test('URLs', async (t) => {
  const refused: Array<[string, RegExp]> = [
    ['http://example.com/hook', /https:\/\//],
    ['ftp://example.com/hook', /https:\/\//],
    ['example.com/hook', /absolute URL/],
    ['https://user:secret@example.com/hook', /user name or password/],
    ['https://user@example.com/hook', /user name or password/],
    ['https://example.com/hook#part', /fragment/],
    ['https://127.0.0.1/hook', /loopback/],
    ['https://[::1]:8443/hook', /loopback/],
    ['https://[::ffff:127.0.0.1]/hook', /loopback/],
    // Other spellings of 127.0.0.1 that URL parsing turns into it.
    ['https://2130706433/hook', /loopback/],
    ['https://0x7f.1/hook', /loopback/],
    ['https://169.254.169.254/latest/meta-data', /link-local/],
    ['https://0.0.0.0/hook', /unspecified/],
    [`https://example.com/${'a'.repeat(2100)}`, /2048/]
  ]
  for (const [url, why] of refused) t.match(webhookUrlProblem(url, false), why, `${url.slice(0, 60)} is refused`)
  t.equal(webhookUrlProblem('https://hooks.example.com/amis?x=1', false), undefined, 'https with a public name')
  t.equal(webhookUrlProblem('https://93.184.216.34:8443/hook', false), undefined, 'https with a public address')
  t.equal(webhookUrlProblem('http://127.0.0.1:9000/hook', true), undefined, 'http and loopback with the setting')
  t.match(webhookUrlProblem('ftp://127.0.0.1/hook', true), /https:\/\/ or http:\/\//, 'other schemes even with it')
  t.match(webhookUrlProblem('http://u:p@127.0.0.1/hook', true), /password/, 'credentials even with it')
})

t.test('a refusal the operator could lift says how: WEBHOOK_ALLOW_PRIVATE=1; the others do not', async (t) => {
  t.equal(
    webhookUrlProblem('https://127.0.0.1/hook', false),
    '127.0.0.1 is not a public address (loopback); the operator may allow http:// and private addresses with ' +
      'WEBHOOK_ALLOW_PRIVATE=1 (for tests and private networks).'
  )
  const urls = [
    'http://example.com/hook',
    'http://127.0.0.1:9000/hook',
    'https://127.0.0.1/hook',
    'https://[::1]:8443/hook',
    'https://[::ffff:10.0.0.1]/hook',
    'https://10.1.2.3/hook',
    'https://169.254.169.254/latest/meta-data',
    'https://100.64.0.1/hook',
    'https://0.0.0.0/hook',
    'ftp://example.com/hook',
    'example.com/hook',
    'https://user:secret@127.0.0.1/hook',
    'https://example.com/hook#part',
    `https://example.com/${'a'.repeat(2100)}`
  ]
  for (const url of urls) {
    const problem = webhookUrlProblem(url, false)
    t.ok(problem, `${url.slice(0, 50)} is refused`)
    const lifted = webhookUrlProblem(url, true) === undefined
    t.equal(
      problem?.includes('WEBHOOK_ALLOW_PRIVATE=1'),
      lifted,
      `${url.slice(0, 50)}: ${lifted ? 'names' : 'does not name'} the setting`
    )
  }
  for (const address of ['127.0.0.1', '::1', '10.0.0.1', 'fd00::1', '::ffff:127.0.0.1', '169.254.169.254']) {
    t.match(addressProblem(address, false), /; the operator may allow .* WEBHOOK_ALLOW_PRIVATE=1/, address)
  }
})

t.test('IP literals', async (t) => {
  t.equal(ipLiteral('[::1]'), '::1')
  t.equal(ipLiteral('10.0.0.1'), '10.0.0.1')
  t.equal(ipLiteral('example.com'), undefined)
})
