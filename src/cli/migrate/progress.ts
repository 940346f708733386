/**
 * Progress on standard error: a bar redrawn in place on a terminal (accounts done, failed, rate,
 * ETA), plain lines every few seconds otherwise (logs, CI).
 */

export interface ProgressCounts {
  done: number
  failed: number
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

  function figures() {
    const elapsed = now() - started
    const rate = elapsed > 0 ? counts.done / (elapsed / 1000) : 0
    const total = options.total
    const eta =
      total !== undefined && rate > 0 && counts.done < total
        ? duration(((total - counts.done) / rate) * 1000)
        : undefined
    return { elapsed, rate, total, eta }
  }

  function line(): string {
    const { rate, total, eta } = figures()
    const of = total !== undefined ? `/${total}` : ''
    return `${counts.done}${of} accounts done, ${counts.failed} failed, ${rate.toFixed(1)}/s${eta ? `, ETA ${eta}` : ''}`
  }

  function bar(): string {
    const { rate, total, eta } = figures()
    const text = ` ${counts.done}${total !== undefined ? `/${total}` : ''} · ${counts.failed} failed · ${rate.toFixed(1)}/s${eta ? ` · ETA ${eta}` : ''}`
    if (total === undefined || total === 0) return `migrating${text}`
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
    update(next: ProgressCounts): void {
      counts = next
    },
    /** A line of its own (a notice), the bar drawn again below it on a terminal. */
    note(text: string): void {
      if (!options.tty) return options.write(text)
      options.write(`\r\x1b[2K${text}`)
      lastDrawn = ''
      draw()
    },
    /** The last state; on a terminal the bar is left on its own line. */
    finish(): void {
      clearInterval(timer)
      draw()
      if (options.tty) options.write('\n')
    }
  }
}
