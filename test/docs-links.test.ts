import t from 'tap'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { projectRoot } from '../src/paths.js'

/** Every relative link of the README and of docs/ (and bench/README.md) must name a file that exists. */

const files = [
  'README.md',
  'bench/README.md',
  ...readdirSync(join(projectRoot, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`)
]

/** Written on another branch: until it is merged here, a missing one is a todo, not a pass. */
const PENDING = new Set(['CONTRIBUTING.md', 'docs/architecture.md'])

/** `[text](target)` and `![alt](target)` outside fenced code blocks; web and mail links left out. */
function relativeLinks(markdown: string): string[] {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '')
  return [...prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map((m) => m[1]!)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith('#'))
}

for (const file of files) {
  t.test(file, async (t) => {
    const links = relativeLinks(readFileSync(join(projectRoot, file), 'utf8'))
    if (file === 'README.md') t.ok(links.length >= 10, 'the README links the documentation')
    for (const link of links) {
      const target = join(dirname(join(projectRoot, file)), decodeURIComponent(link.split('#')[0]!))
      const name = relative(projectRoot, target)
      if (PENDING.has(name) && !existsSync(target)) {
        t.ok(false, `${link} exists`, { todo: `${name} is written on another branch` })
      } else {
        t.ok(existsSync(target), `${link} exists`)
      }
    }
  })
}
