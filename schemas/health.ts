import { Type } from 'typebox'
import { ErrorBody } from './common.js'

export const HealthResponses = {
  200: Type.Object({ status: Type.Literal('ok') }),
  503: ErrorBody
}

export const ReadyResponses = {
  200: Type.Object({
    status: Type.Literal('ok'),
    database: Type.Union([Type.Literal('pglite'), Type.Literal('postgres')])
  }),
  503: ErrorBody
}
