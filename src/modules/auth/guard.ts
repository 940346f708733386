import mercurius, { type IResolverObject, type MercuriusContext } from 'mercurius'
import { CODE } from '../../../schemas/error-codes.js'
import { isWellFormedJson } from '../../../schemas/text.js'
import { AppError, fieldError } from '../../errors.js'
import { tokenFromHeader, type AuthService, type Principal } from './service.js'

/** A module's GraphQL resolvers, by type (`Query`, `Mutation`, an object type): src/plugins/graphql.ts composes them. */
export interface GraphqlResolvers {
  [type: string]: IResolverObject | undefined
}

/** Who may use a field: the service operator only, or anyone with a valid token. */
export type Who = 'operator' | 'anyone'

/** A field's `invalid` error: `detail` says what is wrong with its arguments. */
export const invalid = (detail: string): AppError => fieldError(CODE.invalid, { detail })

export { camelCase } from '../../../schemas/graphql.js'

/** Runs a resolver body and turns our `AppError`s into GraphQL errors with `extensions.code`. */
export async function guarded<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (err) {
    if (err instanceof AppError) throw new mercurius.ErrorWithProps(err.message, { code: err.code })
    throw err
  }
}

/** The organisation's name for the fields organisations read for their own suppliers; undefined for the operator (every supplier). */
export const ownerOf = (caller: Principal): string | undefined =>
  caller.kind === 'organisation' ? caller.organisationName : undefined

/**
 * The one guard of the GraphQL fields that need a token: who calls (`callerOf`), whether they may
 * and their arguments are well-formed (`admit`), and a resolver doing both before its body
 * (`resolver`).
 */
export function createGuard(auth: AuthService) {
  /** The caller of a GraphQL request, by its bearer token: `not_authenticated` without one. */
  async function callerOf(ctx: MercuriusContext): Promise<Principal> {
    const token = tokenFromHeader(ctx.reply.request.headers.authorization)
    if (token === undefined) throw fieldError(CODE.not_authenticated)
    return auth.authenticate(token)
  }

  /** Refuses a caller that is not `who`, then arguments that are not well-formed text. */
  function admit(caller: Principal, args: unknown, who: Who): void {
    if (who === 'operator' && caller.kind !== 'operator') {
      throw fieldError(CODE.permission_denied, { who: 'the service operator', action: 'use this field' })
    }
    if (!isWellFormedJson(args)) throw invalid('Strings must be well-formed Unicode without U+0000.')
  }

  return {
    callerOf,
    admit,
    /** A field's resolver: `run` gets the arguments once the caller is known and admitted. */
    resolver<A, T>(who: Who, run: (args: A, caller: Principal) => Promise<T>) {
      return (_root: unknown, args: A, ctx: MercuriusContext) =>
        guarded(async () => {
          const caller = await callerOf(ctx)
          admit(caller, args, who)
          return run(args, caller)
        })
    }
  }
}

export type Guard = ReturnType<typeof createGuard>
