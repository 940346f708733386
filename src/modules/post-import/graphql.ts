import { camelCase } from '../../../schemas/graphql.js'
import { SECTIONS } from '../../../schemas/sections.js'
import type { GraphqlResolvers, Guard } from '../auth/guard.js'

/** `sections`: the post-import sections as the dashboard names and counts them (its labels come from here). */
export function sectionsResolvers(deps: { guard: Guard }): GraphqlResolvers {
  const sections = SECTIONS.map((s) => ({
    name: s.name,
    label: s.label,
    count: camelCase(s.counted.name),
    countLabel: s.counted.label,
    path: s.path
  }))
  return { Query: { sections: deps.guard.resolver('anyone', async () => sections) } }
}
