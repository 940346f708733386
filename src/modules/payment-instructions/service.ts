import { newId } from '../../ids.js'
import type { FastifyBaseLogger } from 'fastify'
import type { PaymentInstructionRequest, PaymentInstructionResult } from '../../../schemas/payment-instruction.js'
import type { Db } from '../../db/index.js'
import { answer, invalidRequest, problem, sortEntries, type AppError, type ErrorEntry } from '../../errors.js'
import { CODE } from '../../../schemas/error-codes.js'
import type { OrganisationPrincipal } from '../auth/service.js'
import { type ImportedAccount, type PostImportBase } from '../post-import/base.js'
import { createPaymentInstructionsRepository } from './repository.js'
import type { VendorClient, VendorOutcome } from './vendor-client.js'

type StoredInstruction = Awaited<
  ReturnType<ReturnType<typeof createPaymentInstructionsRepository>['instructionsOf']>
>[number]

/**
 * The payment instruction endpoint: the vendor is asked outside any transaction (no database
 * connection is held while it answers); the instruction is then stored in `base.write`, which
 * re-checks the account's instructions under its row lock.
 */
export function createPaymentInstructionsService(base: PostImportBase, db: Db, vendors: VendorClient) {
  const repo = createPaymentInstructionsRepository()

  /** The body of this endpoint: the standard one plus `error_detail` and the request's identifiers. */
  function failure(request: PaymentInstructionRequest, errors: ErrorEntry[], status: 400 | 500 = 400): AppError {
    const sorted = sortEntries(errors)
    const extra = {
      error_detail: sorted[0]!.detail,
      import_supplier: request.import_supplier,
      external_account_number: request.external_account_number,
      reference: request.reference
    }
    return status === 400 ? invalidRequest(sorted, extra) : answer(CODE.server_error, sorted, { extra })
  }

  /**
   * `stored` for a retry of an instruction the account already has; a problem when the account has
   * another active one (or this one with the other type); undefined when it may be stored.
   */
  function against(stored: StoredInstruction[], request: PaymentInstructionRequest): 'stored' | ErrorEntry | undefined {
    const same = stored.find((i) => i.vendor === request.vendor && i.reference === request.reference)
    if (same && same.type === request.type) return 'stored'
    if (same) {
      return problem(CODE.payment_instruction_type_mismatch, 'reference', {
        type: same.type,
        vendor: `${request.vendor} (as stored)`,
        expected: request.type
      })
    }
    if (stored.some((i) => i.status === 'ACTIVE')) {
      return problem(CODE.account_already_has_active_instruction, 'reference')
    }
    return undefined
  }

  /** The vendor's answer as the instruction to store, or the error to answer with. */
  function judge(request: PaymentInstructionRequest, outcome: VendorOutcome, log?: FastifyBaseLogger) {
    const vendor = request.vendor
    switch (outcome.kind) {
      case 'found': {
        const { instruction } = outcome
        const problems: ErrorEntry[] = []
        if (instruction.status !== 'ACTIVE') {
          problems.push(
            problem(CODE.payment_instruction_not_active, 'reference', {
              status: instruction.status.slice(0, 64),
              vendor
            })
          )
        }
        if (instruction.type !== request.type) {
          problems.push(
            problem(CODE.payment_instruction_type_mismatch, 'reference', {
              type: instruction.type.slice(0, 64),
              vendor,
              expected: request.type
            })
          )
        }
        if (problems.length > 0) throw failure(request, problems)
        return instruction
      }
      case 'absent':
        throw failure(request, [problem(CODE.payment_instruction_not_found, 'reference', { vendor })])
      case 'refused':
        log?.warn({ vendor, status: outcome.status }, 'payment vendor refused our credentials')
        throw failure(request, [problem(CODE.payment_vendor_unavailable, null, { vendor })])
      case 'circuit_open':
        throw failure(request, [problem(CODE.payment_vendor_unavailable, null, { vendor })])
      case 'failed':
        log?.warn({ vendor, reason: outcome.reason, attempts: outcome.attempts }, 'payment vendor call failed')
        throw failure(request, [problem(CODE.payment_vendor_error, null, { vendor, attempts: outcome.attempts })], 500)
    }
  }

  return {
    /**
     * The instruction row for an account that has none yet (a batch's new account): the vendor is
     * asked (no database connection held), its answer judged as the single endpoint judges it.
     */
    async planForNewAccount(request: PaymentInstructionRequest, account: { id: string }, log?: FastifyBaseLogger) {
      const outcome =
        request.reference === '.' || request.reference === '..'
          ? { kind: 'absent' as const }
          : await vendors.lookup(request.vendor, request.reference)
      const instruction = judge(request, outcome, log)
      return {
        row: {
          id: newId(),
          accountId: account.id,
          vendor: request.vendor,
          reference: request.reference,
          type: instruction.type,
          status: instruction.status,
          details: instruction.details
        },
        detail: {
          vendor: request.vendor,
          reference: request.reference,
          type: request.type
        }
      }
    },

    async create(
      principal: OrganisationPrincipal,
      request: PaymentInstructionRequest,
      log?: FastifyBaseLogger
    ): Promise<PaymentInstructionResult> {
      const account: ImportedAccount = await base.resolve(
        principal,
        request.import_supplier,
        request.external_account_number
      )
      const result = { service_account_number: account.serviceAccountNumber, reference: request.reference }
      // Before bothering the vendor: a retry after success, or an account that already has one.
      const early = against(await repo.instructionsOf(db, account.id), request)
      if (early === 'stored') return result
      if (early) throw failure(request, [early])
      // `.` and `..` cannot be sent as a path segment (URLs resolve them away): no vendor has them.
      const outcome =
        request.reference === '.' || request.reference === '..'
          ? { kind: 'absent' as const }
          : await vendors.lookup(request.vendor, request.reference)
      const instruction = judge(request, outcome, log)
      return base.write(principal, account, async (tx) => {
        const now = against(await repo.instructionsOf(tx, account.id), request)
        if (now === 'stored') return { result } // a concurrent identical request stored it first
        if (now) throw failure(request, [now])
        await repo.insertInstruction(tx, {
          id: newId(),
          accountId: account.id,
          vendor: request.vendor,
          reference: request.reference,
          type: instruction.type,
          status: instruction.status,
          details: instruction.details
        })
        return {
          result,
          detail: {
            vendor: request.vendor,
            reference: request.reference,
            type: request.type
          }
        }
      })
    }
  }
}
