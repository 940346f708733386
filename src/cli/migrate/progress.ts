/**
 * Progress on standard error: a bar redrawn in place on a terminal (accounts done, failed, rate,
 * ETA), plain lines every few seconds otherwise (logs, CI). Also the bytes of an import job's
 * upload, and the lines of a job the service runs (its own rate, ETA and state).
 */

export interface ProgressCounts {
  done: number
  failed: number
  /** Per second, when someone else measures it (the service; null: not measured now); else counted from the start. */
  rate?: number | null
  /** Seconds left, when someone else knows it (null: not known). */
  etaSeconds?: number | null
  /** Accounts created, shown before the failures. */
  created?: number
  /** Accounts a dry run would create, shown in place of those created. */
  wouldCreate?: number
  /** Accounts found already imported, shown after those created. */
  alreadyImported?: number
  /** A job's state, shown last. */
  state?: string
}

/** What is counted: accounts (the default), a job's lines, or bytes uploaded. */
export type ProgressUnit = 'accounts' | 'lines' | 'bytes'

/** `3.6 MB`, `812 kB`, `940 B` (decimal units). */
export function size(bytes: number): string {
  if (bytes >= 1e9) return `${(bytes / 1e9).toFixed(2)} GB`
  if (bytes >= 1e6) return `${(bytes / 1e6).toFixed(1)} MB`
  if (bytes >= 1e3) return `${(bytes / 1e3).toFixed(0)} kB`
  return `${bytes} B`
}

export interface ProgressOptions {
  write: (text: string) => void
  tty: boolean
  /** Terminal width, for the bar. */
  columns?: number
  /** Accounts in the input, when known. */
  total?: number
  /** How often a plain line is written (not a terminal). */
  intervalMs: number
  now?: () => number
  unit?: ProgressUnit
}

/** `1h 02m`, `3m 05s`, `42s`. */
export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000))
  if (s >= 3600) return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`
  if (s >= 60) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`
  return `${s}s`
}

export function createProgress(options: ProgressOptions) {
  const now = options.now ?? Date.now
  const started = now()
  let counts: ProgressCounts = { done: 0, failed: 0 }
  let lastDrawn = ''
  let finished = false
  const unit = options.unit ?? 'accounts'
  let total = options.total

  function figures() {
    const elapsed = now() - started
    const rate = counts.rate === undefined ? (elapsed > 0 ? counts.done / (elapsed / 1000) : 0) : counts.rate
    const eta =
      counts.etaSeconds !== undefined
        ? counts.etaSeconds === null
          ? undefined
          : duration(counts.etaSeconds * 1000)
        : total !== undefined && rate !== null && rate > 0 && counts.done < total
          ? duration(((total - counts.done) / rate) * 1000)
          : undefined
    return { elapsed, rate, total, eta }
  }

  /** The figures after the count, each with its separator. */
  function parts(separator: string): string {
    const { rate, eta } = figures()
    const shown =
      unit === 'bytes'
        ? [`${size(rate ?? 0)}/s`]
        : [
            ...(counts.created !== undefined ? [`${counts.created} created`] : []),
            ...(counts.wouldCreate !== undefined ? [`${counts.wouldCreate} would be created`] : []),
            ...(counts.alreadyImported !== undefined ? [`${counts.alreadyImported} already imported`] : []),
            `${counts.failed} failed`,
            ...(rate === null ? [] : [`${rate.toFixed(1)}/s`])
          ]
    if (eta) shown.push(`ETA ${eta}`)
    if (counts.state) shown.push(counts.state)
    return shown.map((p) => separator + p).join('')
  }

  const amount = (n: number) => (unit === 'bytes' ? size(n) : String(n))

  function line(): string {
    const of = total !== undefined ? `/${amount(total)}` : ''
    const what = unit === 'bytes' ? 'uploaded' : `${unit} done`
    return `${amount(counts.done)}${of} ${what}${parts(', ')}`
  }

  function bar(): string {
    const text = ` ${amount(counts.done)}${total !== undefined ? `/${amount(total)}` : ''}${parts(' · ')}`
    if (total === undefined || total === 0) {
      return `${unit === 'bytes' ? 'uploading' : unit === 'lines' ? 'running' : 'migrating'}${text}`
    }
    const width = Math.max(10, Math.min(40, (options.columns || 80) - text.length - 10))
    const filled = Math.min(width, Math.round((counts.done / total) * width))
    const percent = String(Math.floor((counts.done / total) * 100)).padStart(3)
    return `${percent}% [${'#'.repeat(filled)}${'-'.repeat(width - filled)}]${text}`
  }

  function draw(): void {
    if (options.tty) {
      const text = bar()
      if (text !== lastDrawn) options.write(`\r\x1b[2K${text}`)
      lastDrawn = text
    } else {
      options.write(`progress: ${line()}\n`)
    }
  }

  const timer = setInterval(draw, options.tty ? 200 : options.intervalMs)
  timer.unref()

  return {
    update(next: ProgressCounts, nextTotal?: number): void {
      counts = next
      if (nextTotal !== undefined) total = nextTotal
    },
    /** Draws now (a plain line too), e.g. when a job's state changed. */
    draw,
    /** A line of its own (a notice), the bar drawn again below it on a terminal. */
    note(text: string): void {
      if (!options.tty) return options.write(text)
      options.write(`\r\x1b[2K${text}`)
      lastDrawn = ''
      draw()
    },
    /** The last state; on a terminal the bar is left on its own line. */
    finish(): void {
      if (finished) return
      finished = true
      clearInterval(timer)
      draw()
      if (options.tty) options.write('\n')
    }
  }
}
