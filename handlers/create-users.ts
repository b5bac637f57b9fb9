import { enrolBatch, enrolOne } from '../src/enrolment';
import type { HandlerContext, JsonAnswerOf, OperationHandler } from './context';

/**
 * POST /users: one learner (`{email, programme_slugs?}`, 201 or an error) or a batch (`{users,
 * atomic?}`, 200 with a result per row); the rules and the transaction are src/enrolment.ts's.
 */
export function createCreateUsers({ db }: HandlerContext): OperationHandler<'createUsers'> {
  return async (request, reply) => {
    const body = request.body;
    if ('users' in body) return enrolBatch(db, request.caller.orgId, body.users, body.atomic ?? false);
    const enrolled = await enrolOne(db, request.caller.orgId, body);
    return reply.code(201).send(enrolled satisfies JsonAnswerOf<'createUsers'>);
  };
}
