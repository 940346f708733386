import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { projectRoot } from '../src/paths.js'
import { setTimeout as sleep } from 'node:timers/promises'

/**
 * Starts a Node process in the project and waits for the line that says where it listens (the
 * pattern's first group). Output before that is kept for the error message; after it, each piece
 * goes to `afterStart` (default: dropped).
 */
export async function start(
  args: string[],
  env: Record<string, string>,
  pattern: RegExp,
  afterStart: (text: string) => void = () => {}
): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, args, {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  let started = false
  const keep = (d: Buffer) => {
    if (started) afterStart(d.toString())
    else out += d.toString()
  }
  child.stdout!.on('data', keep)
  child.stderr!.on('data', keep)
  const deadline = Date.now() + 120_000
  while (Date.now() < deadline) {
    const m = pattern.exec(out)
    if (m) {
      started = true
      return { child, url: m[1]! }
    }
    if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited: ${out}`)
    await sleep(100)
  }
  throw new Error(`${args.join(' ')} did not start: ${out}`)
}

/** Resident memory of a process in MB (Linux). */
export function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m ? Number(m[1]) / 1024 : 0
  } catch {
    return 0
  }
}
