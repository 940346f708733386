import type { FastifyPluginAsync } from 'fastify'
import { SECTIONS } from '../../schemas/sections.js'
import { attachedInput } from '../errors.js'
import { organisationOf } from './auth/service.js'
import { postImportStep } from './failures/route-config.js'
import type { Config } from '../config.js'
import type { Db } from '../db/index.js'
import { createPostImportBase } from './post-import/base.js'
import type { Section, SectionDeps } from './post-import/section.js'
import { SECTION_MODULES } from './section-index.js'

/** Builds every section of the list (schemas/sections.ts), once per app, from its folder's code (section-index.ts). */
export function loadSections(db: Db, config: Config): Section[] {
  // Each section's base records its writes' events with the section's name as their `endpoint`.
  return SECTIONS.map((listing) => {
    const deps: SectionDeps = { db, config, base: createPostImportBase(db, listing.name) }
    return { ...listing, ...SECTION_MODULES[listing.folder].build(deps) }
  })
}

/**
 * The sections' endpoints, one per section. Each answers for its step in the failure records;
 * those that take a turn of work (src/plugins/turns.ts) take it once their body has arrived.
 */
export const sectionRoutes: FastifyPluginAsync<{ sections: Section[] }> = async function sectionRoutes(
  app,
  { sections }
) {
  for (const section of sections) {
    const { route } = section
    app.post(
      section.path,
      {
        config: postImportStep(section.name),
        attachValidation: route.ownsSchemaErrors === true,
        preValidation: route.takesTurn ? app.takeTurn : undefined,
        schema: {
          operationId:
            route.operationId ??
            `create${section.name
              .split('_')
              .map((w) => w[0]!.toUpperCase() + w.slice(1))
              .join('')}`,
          tags: ['Post-import'],
          summary: route.summary,
          description: route.description,
          body: route.body,
          ...(route.querystring ? { querystring: route.querystring } : {}),
          response: route.response
        }
      },
      async function writeSection(request, reply) {
        const body = await section.write(organisationOf(request.principal), attachedInput(request), {
          query: (request.query ?? {}) as Record<string, unknown>,
          log: request.log
        })
        // 201; an empty body for `undefined` (`null` would send the text "null").
        return reply.code(201).send(body)
      }
    )
  }
}
