export * from './tenancy.js'
export * from './imports.js'
