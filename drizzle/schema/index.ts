export * from './tenancy.js'
export * from './imports.js'
export * from './accounts.js'
export * from './post-import.js'
