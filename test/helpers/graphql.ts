import type { FastifyInstance } from 'fastify'
import { TEST_OPERATOR_KEY } from './app.js'

export interface GraphQLResult<T = Record<string, any>> {
  status: number
  data: T | null
  errors?: Array<{ message: string; extensions?: { code?: string } }>
  body: any
}

/** Posts a GraphQL document through `inject`, with a token when given. */
export async function gql<T = Record<string, any>>(
  app: FastifyInstance,
  query: string,
  variables: Record<string, unknown> = {},
  token?: string
): Promise<GraphQLResult<T>> {
  const res = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers: token ? { authorization: `Bearer ${token}` } : {},
    payload: { query, variables }
  })
  const body = res.json()
  return { status: res.statusCode, data: body.data ?? null, errors: body.errors, body }
}

export const OBTAIN_TOKEN = `mutation ObtainToken($input: ObtainTokenInput!) {
  obtainToken(input: $input) { token expiresIn refreshToken refreshExpiresIn }
}`

export async function tokenFor(app: FastifyInstance, apiKey: string): Promise<string> {
  const res = await gql(app, OBTAIN_TOKEN, { input: { APIKey: apiKey } })
  const token = res.data?.obtainToken?.token
  if (typeof token !== 'string') throw new Error('no token: ' + JSON.stringify(res.body))
  return token
}

export const operatorToken = (app: FastifyInstance): Promise<string> => tokenFor(app, TEST_OPERATOR_KEY)

/** Runs an operator mutation or query and returns its data, failing loudly on errors. */
export async function asOperator(app: FastifyInstance, query: string, variables: Record<string, unknown> = {}) {
  const res = await gql(app, query, variables, await operatorToken(app))
  if (res.errors) throw new Error('operator call failed: ' + JSON.stringify(res.errors))
  return res.data!
}

export interface Tenant {
  organisation: string
  supplier: string
  apiKey: string
  apiKeyId: string
  token: string
}

/** An organisation with an API key, a token and one Ongoing import supplier. */
export async function createTenant(app: FastifyInstance, organisation: string, supplier: string): Promise<Tenant> {
  await asOperator(app, 'mutation($n: String!) { createOrganisation(input: {name: $n}) { id } }', { n: organisation })
  const key = await asOperator(app, 'mutation($o: String!) { createApiKey(input: {organisation: $o}) { id key } }', {
    o: organisation
  })
  await asOperator(
    app,
    'mutation($c: String!, $o: String!) { createImportSupplier(input: {code: $c, organisation: $o}) { code } }',
    {
      c: supplier,
      o: organisation
    }
  )
  const apiKey = key.createApiKey.key as string
  return { organisation, supplier, apiKey, apiKeyId: key.createApiKey.id as string, token: await tokenFor(app, apiKey) }
}
