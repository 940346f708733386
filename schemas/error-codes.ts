import { SECTION_NAMES, type SectionName } from './sections.js'

/**
 * Every error code the service answers, with the one wording of its detail and what it means.
 * Call sites raise a code through `CODE` and `formatDetail`; `GET /v1/data-import/error-codes/`,
 * the table in docs/api.md, the dashboard and the command lines show the meanings.
 */

/** A migration step, as STEP_NAMES of schemas/failures.ts has them (not imported: that file reaches this one through fields.ts). */
type Step = 'validate' | 'stage' | 'create' | SectionName

/** Where a code appears in an answer. */
export const CODE_KINDS = ['top', 'entry', 'both', 'graphql'] as const

export interface CodeSpec {
  /**
   * HTTP status of an answer carrying it: a top-level code's own; an entry code's answer (400
   * mostly, 404 for the entries of `not_found`, 500 for those of `server_error`).
   */
  readonly status: number
  /**
   * Where it appears: the answer's top-level `code`, an entry of `errors`, or both. GraphQL-only
   * codes are 'graphql'; HTTP codes that GraphQL also gives in `extensions.code` keep their HTTP
   * kind. The transactions endpoint also lifts its first entry's code to the top level: the
   * transaction codes are 'both'.
   */
  readonly kind: (typeof CODE_KINDS)[number]
  /**
   * The one wording of its `detail` (as an entry for 'both' codes). `{name}` placeholders are
   * filled in when it is raised (values may quote input). Only codes a schema keyword reports use
   * '{detail}': their detail is built from the keyword (src/errors.ts), each says why; a call site
   * raising one of them by hand writes the keyword's own words for that situation.
   */
  readonly detail: string
  /**
   * The top-level `detail` of an answer carrying it where that is not `detail`: for an entry
   * code, the answer whose only entry it is; for a 'both' code, the answer whose top-level code it is.
   */
  readonly answerDetail?: string
  /** One sentence for people reading failures: what went wrong and what to do. Fixed text: no placeholders, never input values. */
  readonly meaning: string
  /** The steps (STEP_NAMES of schemas/failures.ts) whose failure records can carry it; [] when not tied to a step. */
  readonly steps: readonly Step[]
  /**
   * For a 429 or 503 code: the seconds its answer's `Retry-After` asks the client to wait, unless
   * the answer sets its own (a rate limit's: the seconds until its window resets). Every 429 and
   * 503 code has one (src/plugins/errors.ts sends it).
   */
  readonly retryAfterSeconds?: number
}

// Failure records keep 400 and 500 answers only (except the codes src/modules/failures/service.ts leaves out).
const ACCOUNT = ['validate', 'stage', 'create'] as const satisfies readonly Step[]
const EVERY_STEP = [...ACCOUNT, ...SECTION_NAMES] as const
/** Steps whose requests hold transactions: account ledgers, the transactions endpoint, billing documents. */
const WITH_TRANSACTIONS = [...ACCOUNT, 'transactions', 'historical_billing_documents'] as const
const WITH_DATES = [
  ...ACCOUNT,
  'transactions',
  'historical_agreements',
  'historical_billing_documents',
  'historical_statements'
] as const
const WITH_DECIMALS = [...ACCOUNT, 'transactions', 'historical_billing_documents', 'historical_statements'] as const
const NO_STEP = [] as const

export const ERROR_CODES = {
  account_already_has_active_instruction: {
    status: 400,
    kind: 'entry',
    steps: ['payment_instruction'],
    detail: 'The account already has an active payment instruction.',
    meaning:
      'The account already has another active payment instruction; cancel it at the vendor first, or leave the account as it is.'
  },
  account_already_imported: {
    status: 400,
    kind: 'both',
    steps: NO_STEP,
    detail: 'Account {external_account_number} has already been imported as {service_account_number}.',
    answerDetail: 'Account has already been imported.',
    meaning:
      "The account was created earlier; nothing more to do for it but its post-import data (the migration client's --resume sends that)."
  },
  account_billing_options_industry_billing_with_period_data: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: 'Not allowed when industry billing is used.',
    meaning:
      'A billing period length or start day was given although industry billing is used; drop them or turn industry billing off in the source data.'
  },
  account_billing_options_period_data_required: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: 'Required when industry billing is not used.',
    meaning:
      'Without industry billing the account needs a billing period length and start day; add them to the source data.'
  },
  account_failed_validation: {
    status: 400,
    kind: 'top',
    steps: ACCOUNT,
    detail: 'Could not validate account data.',
    meaning:
      'The account data has problems, each listed in errors with its attr; correct them in the source data and send the account again.'
  },
  account_import_in_progress: {
    status: 400,
    kind: 'entry',
    steps: NO_STEP,
    detail: 'An account is being created from this staged data right now.',
    answerDetail: 'Account import in progress.',
    meaning:
      'Another request is creating this account at this moment; wait a second and try again (the migration client does so itself).'
  },
  account_import_skipped: {
    status: 400,
    kind: 'entry',
    steps: NO_STEP,
    detail: 'The import of this account has been marked to be skipped.',
    answerDetail: 'Account import skipped.',
    meaning: 'The operator marked this account to be skipped, so it is not imported; ask the operator if it should be.'
  },
  account_not_found: {
    status: 404,
    kind: 'entry',
    steps: NO_STEP,
    detail: 'No account has been created for this import process.',
    meaning: 'The account is staged but not created yet; create it before sending its post-import data.'
  },
  agreement_start_date_before_supply_start_date: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: 'The agreement starts before the supply start date.',
    meaning:
      "An agreement starts before its supply point's supply start date; correct one of the two dates in the source data."
  },
  already_exists: {
    status: 409,
    kind: 'graphql',
    steps: NO_STEP,
    detail: '{what} already exists.',
    meaning:
      'An operator mutation would create something that exists already under that name; use the existing one or another name.'
  },
  authentication_failed: {
    status: 401,
    kind: 'top',
    steps: NO_STEP,
    detail: 'Incorrect authentication credentials.',
    meaning:
      'The token or API key is not valid (wrong, revoked, or a malformed Authorization header); obtain a new token with a valid API key.'
  },
  balance_mismatch_on_ledger_balance: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: 'The ledger balance must equal the last statement balance plus the current transactions ({expected}).',
    meaning:
      "The ledger balance is not the last statement balance plus the current statement's transactions; correct the balance or the transactions in the source data."
  },
  billing_document_type_mismatch: {
    status: 400,
    kind: 'entry',
    steps: ['historical_billing_documents'],
    detail: 'The document is {document_type} but the request is {request_type}.',
    meaning:
      'A billing document is of another type than the request says; send documents of each type in their own request.'
  },
  blank: {
    status: 400,
    kind: 'entry',
    steps: EVERY_STEP,
    // Why '{detail}': a schema keyword's (minLength, pattern, enum, format) failure on an empty string, in its words.
    detail: '{detail}',
    meaning: 'A required field is empty or only whitespace; fill it in the source data.'
  },
  current_statement_transaction_before_last_statement_closing_date: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: 'The transaction is dated on or before the last statement closing date.',
    meaning:
      'A current statement transaction is dated on or before the last statement closing date; move it to the historical transactions or correct its date.'
  },
  customer_family_name_required: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: 'A family name is required for domestic accounts.',
    meaning: 'A customer of a domestic account has no family name; add it to the source data.'
  },
  customer_with_unknown_occupier: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: 'An account with an unknown occupier has no customers.',
    meaning:
      'The account is marked as having an unknown occupier but lists customers; drop the customers or the unknown occupier flag.'
  },
  date_in_future: {
    status: 400,
    kind: 'entry',
    steps: [...ACCOUNT, 'historical_statements'],
    detail: '{field} is in the future.',
    meaning: 'A date that must already have passed is today or later; correct the date in the source data.'
  },
  does_not_exist: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: 'Import supplier {supplier} does not exist.',
    meaning:
      "The import supplier code is unknown, or not one of your organisation's; check the code (the operator lists the suppliers)."
  },
  dry_run_rolled_back: {
    status: 400,
    kind: 'top',
    steps: NO_STEP,
    detail: 'Account would successfully import. Rolled back due to dry run.',
    meaning: 'A dry run found nothing wrong: the account would be created; send it again without dry_run to create it.'
  },
  duplicate_billing_document_identifiers: {
    status: 400,
    kind: 'entry',
    steps: ['historical_billing_documents'],
    detail: 'Billing document {identifier} appears more than once in the request.',
    meaning: 'Two billing documents of the request have the same identifier; send each document once.'
  },
  duplicate_external_account_number: {
    status: 400,
    kind: 'entry',
    steps: ['stage'],
    detail: 'Account {external_account_number} appears earlier in the batch; each account is sent once.',
    meaning: 'The batch holds the same account twice; send each account once per batch.'
  },
  duplicate_items: {
    status: 400,
    kind: 'entry',
    steps: EVERY_STEP,
    // Why '{detail}': the schema keyword uniqueItems, naming the two items.
    detail: '{detail}',
    meaning: 'A list holds the same item twice; keep each item once.'
  },
  duplicate_ledger_entries_found: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: 'The ledger code appears more than once.',
    meaning: 'The account has two ledgers with the same ledger code; merge them into one in the source data.'
  },
  duplicate_statement_ids: {
    status: 400,
    kind: 'entry',
    steps: ['historical_statements'],
    detail: 'Statement {statement_id} appears more than once in the request.',
    meaning: 'Two statements of the request have the same statement_id; send each statement once.'
  },
  duplicate_supply_addresses_found: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: 'The same supply address appears more than once.',
    meaning:
      'The account lists the same supply address twice; merge them, with their supply points, in the source data.'
  },
  duplicate_supply_point_identifiers: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: 'The supply point identifier appears more than once.',
    meaning:
      'Two supply points of the account have the same identifier; keep each supply point once in the source data.'
  },
  duplicate_transaction_ids: {
    status: 400,
    kind: 'entry',
    steps: WITH_TRANSACTIONS,
    detail: 'Transaction {transaction_id} appears more than once.',
    meaning: 'Two transactions have the same transaction id; give each transaction its own id in the source data.'
  },
  energy_ledger_required: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: 'An ENERGY ledger is required.',
    meaning: 'The account has no ENERGY ledger; every account needs one, so add it to the source data.'
  },
  gaps_or_overlaps_in_agreement_dates: {
    status: 400,
    kind: 'entry',
    steps: [...ACCOUNT, 'historical_agreements'],
    detail: 'The agreement overlaps another agreement of the supply point.',
    meaning:
      'Two agreements of one supply point overlap in time; correct their dates so that each day has at most one agreement.'
  },
  historical_agreement_overlaps_current_agreement: {
    status: 400,
    kind: 'entry',
    steps: ['historical_agreements'],
    detail: 'Historical agreements must end on or before {date}, when the first current agreement starts.',
    meaning:
      "A historical agreement runs into the supply point's first current agreement; end it on or before that agreement's start."
  },
  historical_statement_already_exists: {
    status: 400,
    kind: 'entry',
    steps: ['historical_statements'],
    detail: 'The account already has statement {statement_id} with different fields.',
    meaning:
      'The account already has a statement with this id holding other values; a statement cannot be changed once imported, so check which one is right.'
  },
  historical_statement_transaction_after_last_statement_closing_date: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: 'The transaction is dated after the last statement closing date.',
    meaning:
      'A historical statement transaction is dated after the last statement closing date; move it to the current transactions or correct its date.'
  },
  historical_statement_transactions_require_last_statement_closing_date: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: 'Historical transactions and a non-zero last statement balance need a last statement closing date.',
    meaning:
      'The ledger has historical transactions or a last statement balance but no last statement closing date; add the date to the source data.'
  },
  import_job_does_not_exist: {
    status: 404,
    kind: 'entry',
    steps: NO_STEP,
    detail: 'No import job of yours has this id.',
    meaning: "The import job id is not one of your organisation's jobs; list your jobs to find it."
  },
  import_job_not_cancellable: {
    status: 400,
    kind: 'entry',
    steps: NO_STEP,
    detail: 'The import job is {state}: it can no longer be cancelled.',
    meaning: 'The import job has already completed or been cancelled; nothing is left to stop.'
  },
  import_job_not_open: {
    status: 400,
    kind: 'entry',
    steps: NO_STEP,
    detail: 'The import job is {state}: parts can be added, and the job started, only while it is OPEN.',
    meaning:
      'The import job has been started (or cancelled), so its input is fixed; submit the remaining lines as a new job.'
  },
  import_process_does_not_exist: {
    status: 404,
    kind: 'entry',
    steps: ['create'],
    detail: 'No import process of yours exists for this import supplier (and external account number).',
    meaning:
      'The account was never staged for this supplier (or the supplier is not yours); stage the account first, and check the supplier code.'
  },
  import_supplier_migration_not_ongoing: {
    status: 400,
    kind: 'entry',
    steps: EVERY_STEP,
    detail: 'The migration of import supplier {supplier} is {status}.',
    meaning:
      "The supplier's migration is Paused or Complete, so nothing is imported for it; ask the operator to set it back to Ongoing."
  },
  import_supplier_mismatch: {
    status: 400,
    kind: 'entry',
    steps: ['stage'],
    detail: 'The account is for {account_supplier}, the batch for {batch_supplier}.',
    meaning:
      "An account in the batch names another import supplier than the batch; send each supplier's accounts in their own batches."
  },
  incomplete_line: {
    status: 400,
    kind: 'entry',
    steps: NO_STEP,
    detail: 'The part does not end with a line break: every part must hold whole lines, each ending with \\n.',
    meaning:
      'An uploaded part ends in the middle of a line; split the file at line breaks and send each part ending with one.'
  },
  incorrect_tax_amount: {
    status: 400,
    kind: 'both',
    steps: WITH_TRANSACTIONS,
    detail: 'The tax amount must equal value taxed × rate ({expected}) within 0.01.',
    meaning: "A tax item's amount is not its value taxed times its rate; correct one of the three in the source data."
  },
  incorrect_line_item_net_amount: {
    status: 400,
    kind: 'both',
    steps: WITH_TRANSACTIONS,
    detail: 'The net amount must equal number of units × price per unit ({expected}) within 0.01.',
    meaning:
      "A line item's net amount is not its number of units times its price per unit; correct one of the three in the source data."
  },

  input_erased: {
    status: 410,
    kind: 'top',
    steps: NO_STEP,
    detail: "The job's input lines have been erased (personal data is kept only for the retention period).",
    meaning:
      "The job's input was erased under the retention rules; its results are still there, but its lines are gone."
  },
  invalid: {
    status: 400,
    kind: 'entry',
    steps: EVERY_STEP,
    // Why '{detail}': a schema keyword (type, pattern, format) in its words; also a body, URL or GraphQL argument that
    // cannot be read, each saying what is expected.
    detail: '{detail}',
    meaning: 'A value has the wrong type or form, or the body cannot be read at all; the detail says what is expected.'
  },
  invalid_choice: {
    status: 400,
    kind: 'entry',
    steps: EVERY_STEP,
    // Why '{detail}': the schema keywords enum, const and discriminator, listing the values allowed.
    detail: '{detail}',
    meaning: 'A value is not one of those allowed; the detail lists them, so map the source value to one of them.'
  },
  invalid_country: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: '{country} is not an ISO 3166-1 alpha-2 country code.',
    meaning: "An address's country is not a two-letter ISO 3166-1 code (GB, IE, …); map it to one in the source data."
  },
  invalid_date: {
    status: 400,
    kind: 'entry',
    steps: WITH_DATES,
    // Why '{detail}': the schema keywords format and type of a date field.
    detail: '{detail}',
    meaning: 'A date is not a real calendar day written YYYY-MM-DD; correct its value or format in the source data.'
  },
  invalid_datetime: {
    status: 400,
    kind: 'entry',
    steps: ['notes'],
    // Why '{detail}': the schema keywords format and type of a date-time field.
    detail: '{detail}',
    meaning:
      'A date and time is not ISO 8601 with a time zone (2026-11-01T09:00:00Z); correct its format in the source data.'
  },
  invalid_decimal: {
    status: 400,
    kind: 'entry',
    steps: WITH_DECIMALS,
    // Why '{detail}': the schema keyword type of an amount, or the decimal keyword's own check.
    detail: '{detail}',
    meaning: 'An amount is not a decimal number; send it as a decimal string such as "53.24" (pounds, not pence).'
  },
  invalid_document_path: {
    status: 400,
    kind: 'entry',
    steps: ['notes', 'historical_statements'],
    detail: 'A document path is relative, without "..", backslashes, schemes, empty segments or control characters.',
    meaning:
      "A document path is not a plain relative path in the document bucket; give the path of the document below the supplier's document root."
  },
  invalid_email: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: 'Enter a valid e-mail address.',
    meaning: "A customer's e-mail address is not a valid address; correct it, or leave it out if it is not known."
  },
  invalid_mpan: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail:
      '{identifier} is not a valid MPAN core: 13 digits, the first two a distributor id of 10 or above, the last the check digit.',
    meaning:
      "An ELECTRICITY supply point's identifier is not a 13-digit MPAN core with a valid distributor id and check digit, which this supplier requires; correct the identifier in the source data."
  },
  invalid_mprn: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: '{identifier} is not a valid MPRN: 6 to 10 digits.',
    meaning:
      "A GAS supply point's identifier is not an MPRN of 6 to 10 digits, which this supplier requires; correct the identifier in the source data."
  },
  invalid_phone_number: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: '{phone} is not a valid phone number',
    meaning:
      "A customer's landline is not a valid phone number for the billing address's country; correct it, or give it in international form (+44…)."
  },
  invalid_postcode: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: '{postcode} is not a valid postcode in {country}.',
    meaning:
      "An address's postcode is not valid in its country; correct the postcode or the country in the source data."
  },
  invalid_request: {
    status: 400,
    kind: 'top',
    steps: EVERY_STEP,
    detail: 'Invalid request.',
    meaning: 'The request has problems, each listed in errors with its attr; correct them and send the request again.'
  },
  issued_date_before_bill_period_from_date: {
    status: 400,
    kind: 'entry',
    steps: ['historical_statements'],
    detail: 'issued_date is before bill_period_from_date.',
    meaning:
      'A statement is issued before its bill period starts; correct the issued date or the period in the source data.'
  },
  job_too_large: {
    status: 413,
    kind: 'entry',
    steps: NO_STEP,
    detail: 'The import job would hold more than {limit} bytes.',
    meaning: "The import job is over the service's size limit; split the file into several jobs."
  },
  ledger_balances_not_equal_to_transfer_balance: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: 'The transfer balance must equal the sum of the ledger balances ({total}).',
    meaning:
      'The ledger balances of the account do not add up to its transfer balance; correct the balances or the transfer balance in the source data.'
  },
  ledger_code_does_not_exist: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: 'There is no ledger code {ledger_code}.',
    meaning: "A ledger has a ledger code the service does not know; map it to one of the service's ledger codes."
  },
  ledger_has_finalized_billing_documents: {
    status: 400,
    kind: 'entry',
    steps: ['historical_billing_documents'],
    detail:
      'Ledger {ledger_number} already has finalised billing documents; only an exact repeat of that import is accepted.',
    meaning:
      "The ledger's billing documents were imported already, and once only; send nothing more for it, or exactly the same request again."
  },
  ledger_not_found: {
    status: 400,
    kind: 'entry',
    steps: ['transactions', 'historical_billing_documents'],
    detail: 'The account has no {ledger} ledger.',
    meaning:
      'The account has no ledger with this code (and number); check the ledger code and the ledger number the create answered.'
  },
  ledger_transaction_amount_does_not_match_with_line_item_net_amount_and_tax_amount: {
    status: 400,
    kind: 'both',
    steps: WITH_TRANSACTIONS,
    detail: "The amount must equal the line items' net amounts plus the tax amounts ({expected}).",
    meaning:
      "A supply charge's amount is not the sum of its line items' net amounts and its tax amounts; correct the amount or the items in the source data."
  },
  line_item_units_must_be_two_values: {
    status: 400,
    kind: 'both',
    steps: WITH_TRANSACTIONS,
    detail: 'Units must hold exactly two values.',
    meaning: "A line item's units do not hold exactly two values (the readings); give both in the source data."
  },
  max_decimal_places: {
    status: 400,
    kind: 'entry',
    steps: WITH_DECIMALS,
    // Why '{detail}': the decimal keyword, naming the field's scale.
    detail: '{detail}',
    meaning: 'An amount has more decimal places than the field allows; round it in the source data.'
  },
  max_depth: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    // Why '{detail}': the jsonValue keyword, naming the depth allowed.
    detail: '{detail}',
    meaning: 'A free-form value (metadata) is nested too deeply; flatten it.'
  },
  max_digits: {
    status: 400,
    kind: 'entry',
    steps: WITH_DECIMALS,
    // Why '{detail}': the decimal keyword, naming the field's digits (or a JSON number too precise).
    detail: '{detail}',
    meaning:
      'An amount has more digits before the decimal point than its field allows, or a JSON number carries more than 15 significant digits; check the amount, and send a number that precise as a decimal string.'
  },
  max_items: {
    status: 400,
    kind: 'entry',
    steps: EVERY_STEP,
    // Why '{detail}': the schema keyword maxItems, naming the limit.
    detail: '{detail}',
    meaning: 'A list holds more items than allowed; split the request or shorten the list.'
  },
  max_length: {
    status: 400,
    kind: 'entry',
    steps: EVERY_STEP,
    // Why '{detail}': the schema keyword maxLength (or the jsonValue size, a path segment), naming the limit.
    detail: '{detail}',
    meaning: 'A value is longer than allowed; shorten it in the source data.'
  },
  max_value: {
    status: 400,
    kind: 'entry',
    steps: EVERY_STEP,
    // Why '{detail}': the schema keywords maximum and exclusiveMaximum, naming the limit.
    detail: '{detail}',
    meaning: 'A number is above the largest value allowed; correct it in the source data.'
  },
  metadata_has_duplicate_keys: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: 'The metadata key appears more than once.',
    meaning: "The account's metadata has the same key twice; keep each key once."
  },
  method_not_allowed: {
    status: 405,
    kind: 'top',
    steps: NO_STEP,
    detail: 'This path answers {methods} only.',
    meaning: 'The path does not answer this HTTP method; use one of those in the Allow header.'
  },
  min_items: {
    status: 400,
    kind: 'entry',
    steps: EVERY_STEP,
    // Why '{detail}': the schema keyword minItems, naming the limit (or the account rule needing a customer).
    detail: '{detail}',
    meaning:
      'A list holds fewer items than needed (an account needs a customer unless its occupier is unknown); add the missing items.'
  },
  min_length: {
    status: 400,
    kind: 'entry',
    steps: EVERY_STEP,
    // Why '{detail}': the schema keyword minLength, naming the limit.
    detail: '{detail}',
    meaning: 'A value is shorter than allowed; correct it in the source data.'
  },
  min_value: {
    status: 400,
    kind: 'entry',
    steps: EVERY_STEP,
    // Why '{detail}': the schema keywords minimum and exclusiveMinimum (or the decimal keyword), naming the limit.
    detail: '{detail}',
    meaning: 'A number is below the smallest value allowed; correct it in the source data.'
  },
  not_authenticated: {
    status: 401,
    kind: 'top',
    steps: NO_STEP,
    detail: 'Authentication credentials were not provided.',
    meaning: 'The request has no token; obtain one with obtainToken and send it in the Authorization header.'
  },
  not_found: {
    status: 404,
    kind: 'both',
    steps: NO_STEP,
    detail: '{what} does not exist.',
    answerDetail: 'Not found.',
    meaning:
      'What the request names does not exist, or is not visible to you; the entry (or the GraphQL message) says what.'
  },
  note_body_or_document_path_not_found: {
    status: 400,
    kind: 'entry',
    steps: ['notes'],
    detail: 'A note needs a body or document paths.',
    meaning: 'A note has neither a body nor document paths; give it one of them, or leave the note out.'
  },
  note_unpin_at_earlier_than_creation_date: {
    status: 400,
    kind: 'entry',
    steps: ['notes'],
    detail: 'unpin_at is before the note was created.',
    meaning: 'A note would be unpinned before it was created; correct unpin_at or created_at.'
  },
  null: {
    status: 400,
    kind: 'entry',
    steps: EVERY_STEP,
    // Why '{detail}': the schema keyword type, given null.
    detail: '{detail}',
    meaning: 'A required field is null; give it a value in the source data.'
  },
  occupier_account_with_multiple_supply_addresses: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: 'An account with an unknown occupier has at most one supply address.',
    meaning:
      'An account with an unknown occupier lists several supply addresses; split it into one account per address.'
  },
  operations_team_name_does_not_exist: {
    status: 400,
    kind: 'entry',
    steps: ['create'],
    detail: 'Operations team {team} does not exist.',
    meaning:
      'The operations team named for the create does not exist; check the name (the operator lists the teams) or ask the operator to create it.'
  },
  payload_too_large: {
    status: 413,
    kind: 'top',
    steps: NO_STEP,
    detail: 'The request body is larger than the service accepts.',
    meaning: "The request body is over the service's size limit; send fewer accounts or items per request."
  },
  payment_instruction_not_active: {
    status: 400,
    kind: 'entry',
    steps: ['payment_instruction'],
    detail: 'The payment instruction is {status} at {vendor}, not ACTIVE.',
    meaning:
      'The vendor holds the payment instruction but it is not active; activate it at the vendor, or leave it out.'
  },
  payment_instruction_not_found: {
    status: 400,
    kind: 'entry',
    steps: ['payment_instruction'],
    detail: '{vendor} has no payment instruction with this reference.',
    meaning: 'The vendor has no payment instruction with this reference; check the reference and the vendor.'
  },
  payment_instruction_type_mismatch: {
    status: 400,
    kind: 'entry',
    steps: ['payment_instruction'],
    detail: 'The payment instruction is of type {type} at {vendor}, not {expected}.',
    meaning: 'The payment instruction is of another type than the request says; send the type it has at the vendor.'
  },
  payment_vendor_error: {
    status: 500,
    kind: 'entry',
    steps: ['payment_instruction'],
    detail: '{vendor} did not give a usable answer after {attempts} attempt(s); retry the request as is.',
    meaning: 'The payment vendor did not answer usefully, even after retries; send the same request again later.'
  },
  payment_vendor_unavailable: {
    status: 400,
    kind: 'entry',
    steps: ['payment_instruction'],
    detail:
      "{vendor} cannot be called now: it refuses the service's credentials, or every call to it has failed for a while; do not retry as is.",
    meaning:
      'The service cannot use the payment vendor (its credentials are refused, or the vendor has been failing); tell the operator, and retry once it is fixed.'
  },
  permission_denied: {
    status: 403,
    kind: 'top',
    steps: NO_STEP,
    detail: 'Only {who} may {action}.',
    meaning:
      'The token is of the wrong kind for this (an operator token on a data-import path, an organisation token on an operator field); use the other kind of key.'
  },
  possible_test_email_address: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: 'This looks like a test e-mail address.',
    meaning:
      "A customer's e-mail address looks like a test address (example.com, test@…); give the customer's real address, or leave it out."
  },
  request_header_fields_too_large: {
    status: 431,
    kind: 'top',
    steps: NO_STEP,
    detail: 'The request headers are too large.',
    meaning: "The request's headers are larger than the service reads; send fewer or shorter headers."
  },
  request_timeout: {
    status: 408,
    kind: 'top',
    steps: NO_STEP,
    detail: 'The request did not arrive in time.',
    meaning: 'The request did not arrive completely in time; check the connection and send it again.'
  },
  required: {
    status: 400,
    kind: 'entry',
    steps: EVERY_STEP,
    // Why '{detail}': the schema keywords required and dependentRequired.
    detail: '{detail}',
    meaning: 'A required field is missing; add it to the source data.'
  },
  required_user_role: {
    status: 400,
    kind: 'entry',
    steps: ACCOUNT,
    detail: 'At least one customer must hold the ADMIN role.',
    meaning: 'No customer of the account holds the ADMIN role; give it to the account holder in the source data.'
  },
  route_not_found: {
    status: 404,
    kind: 'entry',
    steps: NO_STEP,
    detail: 'No endpoint {method} {path}.',
    meaning: 'No endpoint has this method and path; check the path against the API documentation.'
  },
  server_error: {
    status: 500,
    kind: 'both',
    steps: EVERY_STEP,
    detail: 'The account could not be created because of a server error.',
    answerDetail: 'A server error occurred.',
    meaning:
      'The service failed on its side and stored nothing; retry later, and give the operator the request id if it keeps failing.'
  },
  service_unavailable: {
    status: 503,
    kind: 'both',
    steps: EVERY_STEP,
    detail: 'The database could not be reached (it may be failing over); nothing was stored.',
    answerDetail: 'The database is not answering.',
    meaning:
      'The service cannot reach its database, or lost it mid-request (a restart, a failover to a standby); nothing of the request was stored. Send it again after Retry-After seconds (the operator is told by the readiness probe).',
    retryAfterSeconds: 5
  },
  service_stopping: {
    status: 503,
    kind: 'top',
    steps: NO_STEP,
    detail: 'The server is stopping. Retry shortly.',
    meaning:
      'The server process is shutting down and takes no new requests; send the request again (another process, or this one restarted, takes it).',
    retryAfterSeconds: 2
  },
  start_date_later_than_end_date: {
    status: 400,
    kind: 'entry',
    steps: WITH_DATES,
    detail: '{end} is not after {start}.',
    meaning: 'A period ends before it starts; correct its start or end date in the source data.'
  },
  supply_point_not_found: {
    status: 400,
    kind: 'entry',
    steps: ['historical_agreements'],
    detail: 'The account has no supply point {supply_point_identifier}.',
    meaning:
      "The agreement names a supply point the account does not have; check the identifier against the account's supply points."
  },
  throttled: {
    status: 429,
    kind: 'top',
    steps: NO_STEP,
    detail: 'Request was throttled. Expected available in {seconds} seconds.',
    meaning: 'Too many requests in the last minute; wait the seconds of the Retry-After header and send it again.',
    // The longest a window lasts; the rate limit sets the seconds until its window resets.
    retryAfterSeconds: 60
  },

  token_expired: {
    status: 401,
    kind: 'top',
    steps: NO_STEP,
    detail: 'The token has expired.',
    meaning: 'The token has expired; obtain a new one with the refresh token or the API key.'
  },
  too_many_accounts_processing: {
    status: 429,
    kind: 'top',
    steps: NO_STEP,
    detail: 'Too many accounts of this import supplier are being processed. Retry shortly.',
    meaning:
      "The supplier's limit of accounts created at once is reached; retry after the Retry-After header's second.",
    // A create holds its slot for well under a second.
    retryAfterSeconds: 1
  },
  too_many_jobs: {
    status: 429,
    kind: 'top',
    steps: NO_STEP,
    detail: 'Your organisation already has {count} import jobs queued, running or paused. Retry when one has finished.',
    meaning:
      "The organisation's limit of import jobs running at once is reached; start this one after another has finished (Retry-After says when to ask again).",
    // Jobs run for minutes: asking again every 10 s starts this one soon after a slot frees, at the cost of one cheap request.
    retryAfterSeconds: 10
  },
  too_many_lines: {
    status: 413,
    kind: 'entry',
    steps: NO_STEP,
    detail: 'The import job would hold more than {limit} lines.',
    meaning: "The import job is over the service's line limit; split the file into several jobs."
  },
  transaction_already_exists: {
    status: 400,
    kind: 'both',
    steps: ['transactions', 'historical_billing_documents'],
    detail: 'Transaction {transaction_id} is already on the ledger.',
    meaning:
      'The ledger already holds a transaction with this id; leave it out, or let the service skip it (check_previously_added).'
  },
  transaction_in_future: {
    status: 400,
    kind: 'both',
    steps: WITH_TRANSACTIONS,
    detail: 'The transaction is dated after today.',
    meaning: 'A transaction is dated after today; correct its date in the source data.'
  },
  transaction_outside_open_statement_period: {
    status: 400,
    kind: 'both',
    steps: ['transactions'],
    detail: 'The open statement starts on {date}.',
    meaning:
      'The transaction is dated before the open statement; let the service move it into the open statement (force_add_to_current_statement) or correct its date.'
  },
  unexpected_field: {
    status: 400,
    kind: 'entry',
    steps: EVERY_STEP,
    // Why '{detail}': the schema keywords additionalProperties and unevaluatedProperties (or a query parameter, a field
    // of an entry).
    detail: '{detail}',
    meaning:
      'The request holds a field the service does not take there (unknown fields are never dropped); remove it, or check its spelling.'
  },
  unsupported_media_type: {
    status: 415,
    kind: 'top',
    steps: NO_STEP,
    detail: 'The request body must be {media_types}.',
    meaning:
      'The request body is not of a media type the endpoint takes; send it with the Content-Type the detail names (application/json, or application/x-ndjson for the lines of an import job).'
  }
} as const satisfies Record<string, CodeSpec>

export type ErrorCode = keyof typeof ERROR_CODES

/** `CODE.invalid_postcode === 'invalid_postcode'`: call sites name a code through this, never as a string literal. */
export const CODE = Object.fromEntries(Object.keys(ERROR_CODES).map((k) => [k, k])) as { readonly [K in ErrorCode]: K }

/** The names of a wording's `{name}` placeholders. */
type Placeholders<S extends string> = S extends `${string}{${infer Name}}${infer Rest}`
  ? Name | Placeholders<Rest>
  : never

/** The placeholder names of a code's wording, as a type: `DetailParams<'date_in_future'>` is `{ field: string | number }`. */
export type DetailParams<C extends ErrorCode> = [Placeholders<(typeof ERROR_CODES)[C]['detail']>] extends [never]
  ? Record<never, never>
  : { readonly [K in Placeholders<(typeof ERROR_CODES)[C]['detail']>]: string | number }

/**
 * A code's detail with its placeholders filled in. A missing value leaves its placeholder as it
 * is: an error answer is never turned into a failure of its own.
 */
export function formatDetail<C extends ErrorCode>(code: C, params: DetailParams<C>): string {
  const values = params as Record<string, string | number | undefined>
  return ERROR_CODES[code].detail.replace(/\{(\w+)\}/g, (whole, name: string) => {
    const value = values[name]
    return value === undefined ? whole : String(value)
  })
}

/** The codes the migration client writes into its report itself, for problems before or around the service's answer. */
export const CLIENT_CODES = {
  client_error: {
    meaning:
      'The migration client itself failed on this line (a bug, or an answer it could not use); run it again, and report it if it keeps failing.'
  },
  graphql_error: {
    meaning: 'The service refused a GraphQL request without saying why in a code; the message says what went wrong.'
  },
  invalid_json: {
    meaning:
      'The line of the input file is not JSON; correct the line (one account per line) and run the failed lines again.'
  },
  invalid_line: {
    meaning:
      'The line is JSON but not an account line (an object holding account and its sections); correct it and run the failed lines again.'
  },
  network_error: {
    meaning:
      'The service did not answer this request, even after retries; check the connection and the service, then run the failed lines again.'
  },
  service_unreachable: {
    meaning:
      'The service stopped answering and did not come back within the wait; the run stopped, resume it once the service is up.'
  }
} as const satisfies Record<string, { meaning: string }>

export type ClientCode = keyof typeof CLIENT_CODES

/** `CLIENT_CODE.network_error === 'network_error'`: the migration client names its own codes through this, never as a string literal. */
export const CLIENT_CODE = Object.fromEntries(Object.keys(CLIENT_CODES).map((k) => [k, k])) as {
  readonly [K in ClientCode]: K
}

/** The meaning of a code of a report or failure record: the service's, the client's, or undefined for a code neither knows. */
export function meaningOf(code: string): string | undefined {
  if (Object.hasOwn(ERROR_CODES, code)) return ERROR_CODES[code as ErrorCode].meaning
  if (Object.hasOwn(CLIENT_CODES, code)) return CLIENT_CODES[code as keyof typeof CLIENT_CODES].meaning
  if (/^http_\d{3}$/.test(code)) {
    return "The service answered with this HTTP status and no error body of its own (a proxy's page, or a crash); check the service and its logs."
  }
  return undefined
}

/**
 * Wordings of a schema keyword's failure where the general one (src/errors.ts) would not say
 * enough: a schema names one with `errorDetails: {keyword: name}`. `{value}` is the value sent
 * (cut to 64 characters), `{allowed}` the values the schema allows, or "none".
 */
export const SCHEMA_DETAILS = {
  vendor_not_configured: 'Payment vendor {value} is not configured on this service; configured: {allowed}.'
} as const satisfies Record<string, string>

export type SchemaDetailName = keyof typeof SCHEMA_DETAILS

/** A schema wording with `{value}` and `{allowed}` filled in. */
export function formatSchemaDetail(name: SchemaDetailName, params: { value: string; allowed: string }): string {
  return SCHEMA_DETAILS[name].replace(/\{(value|allowed)\}/g, (_whole, key: 'value' | 'allowed') => params[key])
}
