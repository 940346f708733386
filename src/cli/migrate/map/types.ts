/** What a mapping run gives: its summary, and the sources file's header and lines. */
import type { Rejected } from './engine.js'
import type { ColumnSource } from './lineage.js'

/** One extract file's account of its rows. Lists hold the first 1,000; the counts are whole. */
export interface FileSummary {
  /** The table the mapping reads it as. */
  table: string
  /** Data rows in the file (the header row not counted), rejected ones included. */
  rows_read: number
  /** Rows whose account number is one of the lines' accounts. */
  rows_used: number
  /** Rows left out: the reader could not split them, a byte the encoding does not define, a blank key. */
  rejected: Rejected[]
  rejected_count: number
  /** Rows whose account number is not in the accounts file (never for the accounts file). */
  orphans: Array<{ row: number; key: string }>
  orphan_count: number
  /** Account numbers the accounts file has more than once (accounts file only), with their rows. */
  repeated_keys: Array<{ key: string; rows: number[] }>
  repeated_key_count: number
}

export interface MapSummary {
  /** By file name as declared. */
  files: Record<string, FileSummary>
  /** Lines written. */
  lines: number
  /** Account numbers the mapping gave more than one line (a join that repeats an account). */
  repeated_lines: Array<{ key: string; lines: number[] }>
  /** Rejected rows + orphan rows + repeated account numbers + repeated lines: 0 when all is well. */
  problems: number
}

export interface SourcesHeader {
  kind: 'sources'
  /** The mapping and extract folder as given (relative to the sources file's folder when they can be). */
  mapping: string
  extract: string
  files: Record<string, FileSummary>
  /** Field path (list indexes written `[]`) → the one file and column it is taken from. */
  columns: Record<string, ColumnSource>
}

export interface SourceLine {
  /** 1-based line of the lines file. */
  line: number
  /** The source account number. */
  account: string
  /** Source rows by file name (rows as a spreadsheet numbers them, header = 1). */
  rows: Record<string, number[]>
}
