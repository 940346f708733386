import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ImportProcessListResponses, SupplierParams } from '../../../schemas/imports.js'
import { organisationOf } from '../auth/service.js'
import type { ProcessList } from './repository.js'
import { createImportsRepository } from './repository.js'
import { createImportsService } from './service.js'

/** The read endpoints of §7, under /v1/data-import (organisation tokens only). */
const importsRoutes: FastifyPluginAsyncTypebox = async function importsRoutes(app) {
  const service = createImportsService(createImportsRepository(app.db))

  for (const list of ['all', 'pending', 'imported'] as ProcessList[]) {
    app.get(`/${list}-account-import-processes/:supplier/`, {
      schema: { params: SupplierParams, response: ImportProcessListResponses }
    }, async function listProcesses(request) {
      const { organisationId } = organisationOf(request.principal)
      return service.listProcesses(organisationId, request.params.supplier, list)
    })
  }
}

export default importsRoutes
