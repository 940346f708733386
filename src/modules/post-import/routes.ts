import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Config } from '../../config.js'
import notesRoutes from '../notes/routes.js'
import { createPostImportBase, type PostImportBase } from './service.js'

export interface PostImportRouteOptions {
  base: PostImportBase
  config: Config
}

/** The post-import endpoints of §9, under /v1/data-import. */
const postImportRoutes: FastifyPluginAsyncTypebox<{ config: Config }> = async function postImportRoutes(app, opts) {
  const options: PostImportRouteOptions = { base: createPostImportBase(app.db), config: opts.config }
  await app.register(notesRoutes, options)
}

export default postImportRoutes
