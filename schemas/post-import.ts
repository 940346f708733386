import { Type } from 'typebox'
import { StandardErrorResponses } from './common.js'
import { Strict, Text, Trimmed } from './fields.js'

/** What every post-import request carries: the account it is for. */
export const accountRef = {
  import_supplier: Text(255),
  external_account_number: Trimmed(128)
}

/** A document path: relative, 1–1024; the rules of `src/rules/documents.ts` say `invalid_document_path`. */
export const DocumentPath = Text(1024)

/** A post-import request: the account reference plus the endpoint's own fields (and schema options). */
export function PostImportBody<T extends Record<string, Parameters<typeof Strict>[0][string]>>(
  fields: T,
  options: Record<string, unknown> = {}
) {
  return Strict({ ...accountRef, ...fields }, options)
}

/** 201 with an empty body (historical agreements, billing documents). */
export const EmptyResponse = Type.Unsafe<undefined>(Type.Null())

export { StandardErrorResponses }
