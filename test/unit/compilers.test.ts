import t from 'tap'
import { compileBody, serializerCompiler, validatorCompiler } from '../../src/validation.js'

const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false }
const compile = (httpPart: string, s: object = schema) =>
  validatorCompiler({ schema: s, httpPart, method: 'POST', url: '/x' } as never) as (data: unknown) => boolean

t.test('a schema is compiled once per process, found by its text', async (t) => {
  t.equal(compileBody(schema), compileBody(structuredClone(schema)), 'an equal copy gets the same validator')
  t.equal(compile('body'), compileBody(structuredClone(schema)), 'routes and services share it')
  t.not(compileBody({ ...schema, required: [] }), compileBody(schema), 'another schema gets its own')
})

t.test('bodies are never coerced; query strings, params and headers are', async (t) => {
  t.notOk(compile('body')({ n: '22' }), 'a body\'s "22" is not 22')
  const query = { n: '22' }
  t.ok(compile('querystring')(query), "a query string's is")
  t.same(query, { n: 22 })
  t.not(compile('querystring'), compile('body'))
})

t.test('an integer of a path or query string is taken only as plain digits', async (t) => {
  for (const part of ['params', 'querystring']) {
    const validate = compile(part) as ((data: unknown) => boolean) & { errors?: Array<Record<string, unknown>> }
    for (const text of ['0', '7', '-7', '10000']) t.ok(validate({ n: text }), `${part} ${text}`)
    for (const text of ['07', '+7', '7.0', '7e0', '0x7', ' 7', '7 ', '-0', '']) {
      t.notOk(validate({ n: text }), `${part} ${JSON.stringify(text)}: refused`)
      t.match(validate.errors, [{ instancePath: '/n', params: { code: 'invalid' }, data: text }])
      t.equal(validate.errors?.length, 1, 'one problem at the parameter')
    }
  }
  t.ok(compile('body')({ n: 7 }), 'a body is validated as sent')
})

t.test('a response serialiser is compiled once per schema', async (t) => {
  const serialize = serializerCompiler({ schema, method: 'GET', url: '/x', httpStatus: '200' } as never)
  t.equal(serializerCompiler({ schema, method: 'GET', url: '/y', httpStatus: '200' } as never), serialize)
  t.equal(serialize({ n: 1, secret: 'x' }), '{"n":1}', 'only what the schema names is sent')
})
