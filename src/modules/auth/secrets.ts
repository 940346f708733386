import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

/** A new secret of 256 random bits, with a readable prefix so leaked keys are recognisable. */
export function newSecret(prefix: 'amk' | 'amr' | 'amo'): string {
  return `${prefix}_${randomBytes(32).toString('base64url')}`
}

/** Keys are 256-bit random, so a plain SHA-256 is a safe one-way store (no slow hash needed). */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('base64url')
}

export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}
