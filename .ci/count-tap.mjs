// Counts a raw TAP stream (tap -R tap) and prints `N passed, N failed[, N skipped]`.
// Leaf test points are counted; a subtest that failed without any failing leaf (a crash,
// a timeout, a bad plan) counts as one failure. Exit code 1 when anything failed.
import { readFileSync } from 'node:fs'
import { Parser } from 'tap-parser'

const totals = { passed: 0, failed: 0, skipped: 0 }

function attach(parser, node) {
  let child = null
  parser.on('child', (childParser) => {
    child = { failedLeaves: 0, parent: node }
    attach(childParser, child)
  })
  parser.on('assert', (res) => {
    if (child) {
      // The summary line of the subtest that just ended.
      const summarised = child
      child = null
      if (!res.ok && !res.todo && summarised.failedLeaves === 0) fail(node)
      return
    }
    if (res.skip || res.todo) totals.skipped++
    else if (res.ok) totals.passed++
    else fail(node)
  })
}

function fail(node) {
  totals.failed++
  for (let n = node; n; n = n.parent) n.failedLeaves++
}

let broken = 0
function count(text) {
  return new Promise((resolve) => {
    const before = totals.failed
    const parser = new Parser({ bail: false })
    attach(parser, { failedLeaves: 0, parent: null })
    parser.on('complete', (result) => {
      // No test at all, or a failure no test point shows (no plan): the run itself broke.
      if ((!result.ok && totals.failed === before) || result.count === 0) broken++
      resolve()
    })
    parser.end(text)
  })
}

const files = process.argv.slice(2)
for (const file of files) await count(readFileSync(file, 'utf8'))
totals.failed += broken
const skipped = totals.skipped ? `, ${totals.skipped} skipped` : ''
console.log(`${totals.passed} passed, ${totals.failed} failed${skipped}`)
process.exitCode = totals.failed > 0 ? 1 : 0
