import { Type, type Static } from 'typebox'
import { DateString, Strict, Text } from './fields.js'
import { EmptyResponse, PostImportBody, StandardErrorResponses } from './post-import.js'

/** Historical agreements: `effective_to` is exclusive. */
export const HistoricalAgreement = Strict({
  supply_point_identifier: Text(64),
  tariff_code: Text(64),
  effective_from: DateString,
  effective_to: DateString
})
export type HistoricalAgreement = Static<typeof HistoricalAgreement>

export const HistoricalAgreementsRequest = PostImportBody({
  agreements: Type.Array(HistoricalAgreement, { minItems: 1, maxItems: 500 })
})
export type HistoricalAgreementsRequest = Static<typeof HistoricalAgreementsRequest>

/** Typed `undefined` so the route can `send()` nothing: a `null` payload would be serialised as `null`. */
export const HistoricalAgreementsResponses = { 201: EmptyResponse, ...StandardErrorResponses }
