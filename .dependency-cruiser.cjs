/**
 * The architecture, checked by `npm run lint` (dependency-cruiser): what may import what.
 * docs/architecture.md explains the layers these rules keep apart.
 */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A cycle makes load order matter and modules impossible to read one at a time.',
      from: {},
      to: { circular: true }
    },
    {
      name: 'rules-are-pure',
      severity: 'error',
      comment:
        'Business rules read a request (and a snapshot handed to them), never the database: unit tests call them directly.',
      from: { path: '^src/(rules/|accounts/rules\\.ts$|modules/[^/]+/rules\\.ts$)' },
      to: {
        path: ['^src/db/', 'repository\\.ts$', 'service\\.ts$', 'node_modules/(drizzle-orm|postgres|@electric-sql)/']
      }
    },
    {
      name: 'sql-only-in-repositories',
      severity: 'error',
      comment:
        "Queries live in a module's repository.ts (and the connection in src/db/; the tables in drizzle/schema/); services and routes call repositories.",
      from: { path: '^src/', pathNot: ['repository\\.ts$', '^src/db/', '^src/logging\\.ts$'] },
      to: { path: 'node_modules/(drizzle-orm|postgres)/', dependencyTypesNot: ['type-only'] }
    },
    {
      name: 'routes-call-services',
      severity: 'error',
      comment: 'A route validates, calls its service and answers; it does not query.',
      from: { path: 'routes\\.ts$' },
      to: { path: 'repository\\.ts$', dependencyTypesNot: ['type-only'] }
    },
    {
      name: 'modules-do-not-import-plugins',
      severity: 'error',
      comment:
        'Plugins wire modules into the app: a module that imports one depends on the app around it and cannot be used without it.',
      from: { path: '^src/modules/' },
      to: { path: '^src/plugins/' }
    },
    {
      name: 'repositories-stay-in-their-module',
      severity: 'error',
      comment:
        "A repository's queries serve its own module; another module asks that module's service, or shares through src/accounts/ or src/db/. Its types may be shared.",
      from: { path: '^src/modules/([^/]+)/' },
      to: {
        path: '^src/modules/[^/]+/repository\\.ts$',
        pathNot: '^src/modules/$1/repository\\.ts$',
        dependencyTypesNot: ['type-only']
      }
    },
    {
      name: 'shared-code-stays-below-modules',
      severity: 'error',
      comment:
        'src/accounts/, src/db/ and src/rules/ serve the modules: a module can use them without the others, so they import no module or plugin.',
      from: { path: '^src/(accounts|db|processes|rules)/' },
      to: { path: '^src/(modules|plugins)/' }
    },
    {
      name: 'service-code-does-not-import-tests',
      severity: 'error',
      from: { path: '^(src|schemas|drizzle)/' },
      to: { path: '^(test|bench)/' }
    }
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' }
  }
}
