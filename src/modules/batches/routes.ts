import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { BatchRequest, BatchResponses } from '../../../schemas/batches.js'
import { organisationOf } from '../auth/service.js'
import type { Section } from '../post-import/section.js'

/** `POST batches/`: many accounts per request, each staged, created and given its history. */
const batchesRoutes: FastifyPluginAsyncTypebox<{ sections: Section[] }> = async function batchesRoutes(app, opts) {
  // The migration's own work: PGlite batch transactions are sized by the requests of others (chunks.ts).
  app.addHook('onRoute', (route) => {
    route.config = { ...route.config, bulk: true }
  })
  const service = app.services.batches
  app.post(
    '/batches/',
    {
      preValidation: app.takeTurn,
      schema: {
        tags: ['Batches'],
        summary: 'Migrate many accounts at once',
        description:
          `Up to 1,000 entries \`{account, ${opts.sections.map((s) => `${s.name}?`).join(', ')}}\`. Each is staged` +
          ', created and given its sections in that ' +
          "order, with the single endpoints' rules, and gets its own result (200, in request order); a step that fails " +
          'stops its entry only. Problems of the request as a whole (its fields, the supplier, the team) are a 400 and ' +
          'nothing is stored. `dry_run: true` validates, stages and dry-run creates every entry.',
        body: BatchRequest,
        response: BatchResponses
      }
    },
    async function runBatch(request) {
      const outcome = await service.run(organisationOf(request.principal), request.body, request.log)
      if (outcome.kind === 'refused') throw outcome.error
      return outcome.response
    }
  )
}

export default batchesRoutes
