/**
 * Which file and column each field of the entry comes from, read from DuckDB's own parse of the
 * mapping's final SELECT (json_serialize_sql).
 */
import type { DuckDBConnection } from '@duckdb/node-api'
import type { DeclaredFile } from './header.js'

export interface ColumnSource {
  file: string
  column: string
}

export async function lineageOf(
  _connection: DuckDBConnection,
  _select: string,
  _files: DeclaredFile[]
): Promise<Record<string, ColumnSource>> {
  return {}
}
