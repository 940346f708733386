import type { FastifyBaseLogger } from 'fastify'
import type { TSchema } from 'typebox'
import type { SectionListing, SectionName } from '../../../schemas/sections.js'
import type { Config } from '../../config.js'
import type { SupplierRow } from '../../db/columns.js'
import type { Db } from '../../db/index.js'
import type { TableRows } from '../../db/insert.js'
import type { ErrorEntry } from '../../errors.js'
import type { AccountRows } from '../../accounts/plan.js'
import type { OrganisationPrincipal } from '../auth/service.js'
import type { PostImportBase } from './base.js'

/**
 * A post-import section (notes, transactions, …): what its folder's `section.ts` exports. The one
 * list of sections (schemas/sections.ts) names them, the index (src/modules/section-index.ts)
 * imports them; `loadSections` (src/modules/sections.ts) builds each once per app, and from them
 * the routes and batches are made in a loop.
 */
export interface SectionModule<Body = unknown> {
  build(deps: SectionDeps): SectionBehaviour<Body>
}

/** What a section is built with. */
export interface SectionDeps {
  db: Db
  base: PostImportBase
  config: Config
}

/**
 * An account a batch is creating, as its sections plan against it: nothing imported after it
 * yet. `rows` are its rows as they will be inserted: a section that changes a balance changes
 * its ledger row there; `transactionIds` holds, by ledger id, the transaction ids on it so far.
 */
export interface NewAccount {
  id: string
  supplier: SupplierRow
  rows: AccountRows
  transactionIds: Map<string, Set<string>>
  now: Date
  today: string
}

/** A section's writes for a new account: its rows, and the detail of its POST_IMPORT_WRITE event (none: nothing written). */
export interface PlannedSection {
  rows: TableRows[]
  detail: Record<string, unknown> | undefined
}

export interface WriteOptions {
  /** The endpoint's query string (defaults when a batch writes). */
  query: Record<string, unknown>
  log: FastifyBaseLogger
}

/**
 * A request of the section: its body (of type `Body` once its schema passed; `unknown` for a
 * section that owns its schema problems) and those problems.
 */
export interface SectionInput<Body> {
  body: Body
  schemaErrors: ErrorEntry[]
}

export interface SectionBehaviour<Body = unknown> {
  route: {
    /** Its OpenAPI operationId when not `create` + its name in PascalCase. */
    operationId?: string
    summary: string
    description: string
    body: TSchema
    querystring?: TSchema
    response: Record<number, TSchema>
    /**
     * The section shapes its own answer to schema problems (transactions: a problem inside one
     * transaction has the transaction body), so `write` and `planNew` get them; otherwise a
     * schema problem is the standard 400 before they run.
     */
    ownsSchemaErrors?: boolean
    /** Takes a turn of work (src/plugins/turns.ts); false for one that waits on another service holding no connection. */
    takesTurn: boolean
  }
  /** The endpoint's write for a created account (a batch's account created before too); resolves to the 201 body. */
  write(principal: OrganisationPrincipal, input: SectionInput<Body>, options: WriteOptions): Promise<unknown>
  /** The rows of a valid request for an account a batch is creating; throws the 400 the endpoint would answer. */
  planNew(
    input: SectionInput<Body>,
    account: NewAccount,
    log: FastifyBaseLogger
  ): PlannedSection | Promise<PlannedSection>
}

/** A section as the app uses it: its listing and its behaviour. */
export type Section = SectionListing & { name: SectionName } & SectionBehaviour

/** A section's module; `Body` is the type of its request schema (`route.body`), which routes and batches check before calling it. */
export const defineSection = <Body>(module: SectionModule<Body>): SectionModule => module
