/**
 * The mapping's statements, each with the line of the file it starts on, so that DuckDB's own
 * error positions ("LINE 12: …") are the mapping file's lines: each statement is run with as many
 * newlines before it as the file has before it. Splitting only finds the semicolons that end
 * statements (outside quotes and comments); DuckDB parses each one, and the count is checked
 * against DuckDB's own split.
 */
export interface Statement {
  /** The statement as written, without its semicolon, preceded by newlines to its place in the file. */
  text: string
  /** The line its first word is on. */
  line: number
}

export function splitStatements(sql: string): Statement[] {
  const out: Statement[] = []
  let start = 0
  let firstWord = -1
  let i = 0
  const end = (at: number) => {
    if (firstWord >= 0) {
      const before = sql.slice(0, start).split('\n').length - 1
      out.push({ text: '\n'.repeat(before) + sql.slice(start, at), line: sql.slice(0, firstWord).split('\n').length })
    }
    start = at + 1
    firstWord = -1
  }
  while (i < sql.length) {
    const c = sql[i]!
    if (c === '-' && sql[i + 1] === '-') {
      const nl = sql.indexOf('\n', i)
      i = nl < 0 ? sql.length : nl
      continue
    }
    if (c === '/' && sql[i + 1] === '*') {
      const close = sql.indexOf('*/', i + 2)
      i = close < 0 ? sql.length : close + 2
      continue
    }
    if (c === ';') {
      end(i)
      i++
      continue
    }
    if (!/\s/.test(c) && firstWord < 0) firstWord = i
    if (c === "'" || c === '"') {
      // A quote ends at the next one not doubled ('it''s').
      let j = i + 1
      for (;;) {
        const q = sql.indexOf(c, j)
        if (q < 0) {
          j = sql.length
          break
        }
        if (sql[q + 1] === c) j = q + 2
        else {
          j = q + 1
          break
        }
      }
      i = j
      continue
    }
    if (c === '$') {
      const tag = /^\$[A-Za-z_]*\$/.exec(sql.slice(i, i + 64))?.[0]
      if (tag) {
        const close = sql.indexOf(tag, i + tag.length)
        i = close < 0 ? sql.length : close + tag.length
        continue
      }
    }
    i++
  }
  end(sql.length)
  return out
}
