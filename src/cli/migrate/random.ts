import { createHash } from 'node:crypto'

/**
 * A small seeded pseudo-random generator (sfc32, seeded from SHA-256 of a text): the same seed
 * gives the same numbers on every machine and Node version. Not for secrets.
 */
export class Random {
  private a: number
  private b: number
  private c: number
  private d: number

  constructor(seed: string) {
    const hash = createHash('sha256').update(seed).digest()
    this.a = hash.readUInt32LE(0)
    this.b = hash.readUInt32LE(4)
    this.c = hash.readUInt32LE(8)
    this.d = hash.readUInt32LE(12)
    for (let i = 0; i < 12; i++) this.next()
  }

  /** A number in [0, 1). */
  next(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0
    this.d = (this.d + 1) | 0
    this.a = this.b ^ (this.b >>> 9)
    this.b = (this.c + (this.c << 3)) | 0
    this.c = (this.c << 21) | (this.c >>> 11)
    this.c = (this.c + t) | 0
    return (t >>> 0) / 4294967296
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1))
  }

  chance(probability: number): boolean {
    return this.next() < probability
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!
  }

  /** `count` digits, the first one not zero. */
  digits(count: number): string {
    let text = String(this.int(1, 9))
    while (text.length < count) text += String(this.int(0, 9))
    return text
  }
}

/** Eight upper-case hex characters that name a seed (the prefix of generated account numbers). */
export function seedTag(seed: string): string {
  return createHash('sha256').update(`amis-migrate:${seed}`).digest('hex').slice(0, 8).toUpperCase()
}
