import { Type, type Static } from 'typebox'
import { StandardErrorResponses, SupplierCode } from './common.js'

export const SupplierParams = Type.Object({ supplier: SupplierCode }, { additionalProperties: false })
export type SupplierParams = Static<typeof SupplierParams>

/** Paging of the lists: `limit` rows after the external account number `after` (exclusive). */
export const ListQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10000 })),
    after: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 }))
  },
  { additionalProperties: false }
)

/** One entry of the import-process lists. */
export const ImportProcessListItem = Type.Object({
  external_account_number: Type.String(),
  service_account_number: Type.Union([Type.String(), Type.Null()]),
  account_created_at: Type.Union([Type.String(), Type.Null()])
})
export type ImportProcessListItem = Static<typeof ImportProcessListItem>

export const ImportProcessListResponses = {
  200: Type.Array(ImportProcessListItem),
  ...StandardErrorResponses
}
