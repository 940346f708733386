import { Ajv, type Options } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifySchemaCompiler } from 'fastify'

// ajv-formats is CommonJS; under NodeNext its default import is the module object.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as unknown as (ajv: Ajv) => Ajv

function makeAjv(coerceTypes: boolean): Ajv {
  const options: Options = {
    removeAdditional: false, // the contract rejects unknown fields instead of dropping them
    allErrors: true, // one response lists every problem
    useDefaults: true,
    discriminator: true,
    strict: true,
    coerceTypes,
    verbose: true // errors carry their data and schema: `null` detection and per-schema codes
  }
  const ajv = new Ajv(options)
  addFormats(ajv)
  // `errorCodes: {keyword: code}` on a schema names the contract code its failures report.
  ajv.addKeyword({ keyword: 'errorCodes', schemaType: 'object' })
  return ajv
}

/** Bodies are never coerced ("22" is not 22); query strings, params and headers are. */
const bodyAjv = makeAjv(false)
const coercingAjv = makeAjv(true)

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
  (httpPart === 'body' ? bodyAjv : coercingAjv).compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>
