import type { Attributes } from '@opentelemetry/api'
import type postgres from 'postgres'
import { activeTracer, span } from '../tracing.js'

/**
 * Spans of the database layer (postgres.js has no OpenTelemetry instrumentation of its own): one per
 * transaction and one per statement, on both drivers. A statement's span carries its shape, the SQL
 * text Drizzle sends with `$1, $2, …` where the values go, never the values. Nothing is done when
 * the work is not traced.
 */

/** A statement's text longer than this is cut (a multi-row insert repeats its row shape). */
const SHAPE_MAX = 2000

const OPERATION =
  /^\s*(select|insert|update|delete|begin|commit|rollback|savepoint|release|set|create|alter|drop|lock|values|call|do|copy|truncate|with)\b/i
/** A statement with common table expressions writes when one of them does. */
const WRITE = /\b(insert\s+into|update\s+"|delete\s+from)/i
const TARGET = /\b(?:from|into|update|join)\s+("(?:[^"]|"")+"(?:\."(?:[^"]|"")+")?|[a-z_][a-z0-9_.]*)/i

/** The statement span's name and attributes: `SELECT "accounts"`, db.system, db.query.text (the shape). */
export function statementSpan(text: string): { name: string; attributes: Attributes } {
  let operation = (OPERATION.exec(text)?.[1] ?? 'statement').toUpperCase()
  let target = TARGET.exec(text)?.[1]?.replace(/"/g, '')
  if (operation === 'WITH') {
    const write = WRITE.exec(text)
    operation = write ? write[1]!.split(/\s/)[0]!.toUpperCase() : 'SELECT'
    if (write) target = TARGET.exec(text.slice(write.index))?.[1]?.replace(/"/g, '') ?? target
  }
  const shape = text.length > SHAPE_MAX ? `${text.slice(0, SHAPE_MAX)}…` : text
  return {
    name: target ? `${operation} ${target}` : operation,
    attributes: {
      'db.system': 'postgresql',
      'db.system.name': 'postgresql',
      'db.operation.name': operation,
      ...(target ? { 'db.collection.name': target } : {}),
      'db.query.text': shape
    }
  }
}

const TRANSACTION_ATTRIBUTES: Attributes = { 'db.system': 'postgresql', 'db.system.name': 'postgresql' }

/** A statement sent now (`send` returns its promise), in a span when traced. */
export function tracedStatement<T>(text: string, send: () => Promise<T>): Promise<T> {
  if (activeTracer() === undefined) return send()
  const { name, attributes } = statementSpan(text)
  return span(name, attributes, send)
}

/** A transaction (`run` begins it and returns its outcome), in a span when traced. */
export function tracedTransaction<T>(run: () => Promise<T>): Promise<T> {
  if (activeTracer() === undefined) return run()
  return span('transaction', TRANSACTION_ATTRIBUTES, run)
}

/**
 * A postgres.js query as Drizzle gets it: lazy (sent when first awaited, after `.values()` may have
 * been called on it). When traced, its span begins when it is sent and ends when it is answered.
 */
export function tracedQuery<Q extends PromiseLike<unknown>>(query: Q, text: string): Q {
  if (activeTracer() === undefined) return query
  const then = query.then.bind(query) as (ok: (v: unknown) => void, fail: (e: unknown) => void) => void
  let answered: Promise<unknown> | undefined
  Object.defineProperty(query, 'then', {
    configurable: true,
    value(ok?: (v: unknown) => unknown, fail?: (e: unknown) => unknown) {
      answered ??= tracedStatement(text, () => new Promise((resolve, reject) => then(resolve, reject)))
      return answered.then(ok, fail)
    }
  })
  return query
}

type Sql = postgres.Sql | postgres.TransactionSql

/**
 * The postgres.js client as Drizzle should use it: small statements prepared (`prepare`), and its
 * statements and transactions (savepoints too) traced.
 */
export function driverClient<T extends Sql>(sql: T, prepare: (query: string, parameters: number) => boolean): T {
  return new Proxy(sql, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      if (property === 'unsafe') {
        return (query: string, parameters?: unknown[], queryOptions?: { prepare?: boolean }) =>
          tracedQuery(
            target.unsafe(query, parameters as never, {
              ...queryOptions,
              prepare: prepare(query, parameters?.length ?? 0)
            }),
            query
          )
      }
      if (property === 'begin' || property === 'savepoint') {
        return (...args: unknown[]) => {
          const last = args.length - 1
          const fn = args[last] as (tx: postgres.TransactionSql) => unknown
          return tracedTransaction(() =>
            Promise.resolve(
              (value as (...a: unknown[]) => unknown).apply(target, [
                ...args.slice(0, last),
                (tx: postgres.TransactionSql) => fn(driverClient(tx, prepare))
              ])
            )
          )
        }
      }
      return typeof value === 'function' ? value.bind(target) : value
    }
  })
}
