import { sql } from 'kysely';
import type { DB } from './connection';
import { parisRfc3339 } from './render';
import { recordEvent } from './webhooks';

export interface Activation {
  /** false when the call changed nothing (already activated, or not a learner of the organisation). */
  activated: boolean;
  eventId: string | null;
}

/**
 * A learner's first login, as the login write path or a simulated activity records it: the account's
 * `first_login_at`, the membership `invité` -> `actif` (joined then), the live licence `attribuée` ->
 * `activée`, and one `learner.activated` event, all in the caller's transaction. Idempotent: the
 * guarded updates take the row locks, so of two concurrent calls only one changes anything and
 * records the event; a later call does nothing (docs/decisions.md#licence-states).
 */
export async function activateOnFirstLogin(trx: DB, login: { orgId: string; membershipId: string; at: Date }): Promise<Activation> {
  const { orgId, membershipId, at } = login;
  const learner = await trx
    .selectFrom('memberships as m')
    .innerJoin('accounts as a', 'a.id', 'm.account_id')
    .select(['a.id as user_id', 'a.email', 'a.name'])
    .where('m.id', '=', membershipId)
    .where('m.org_id', '=', orgId)
    .executeTakeFirst();
  if (!learner) return { activated: false, eventId: null };

  await trx
    .updateTable('accounts')
    .set({ first_login_at: at })
    .where('id', '=', learner.user_id)
    .where('first_login_at', 'is', null)
    .execute();
  const joined = await trx
    .updateTable('memberships')
    .set({ status: 'actif', joined_at: at })
    .where('id', '=', membershipId)
    .where('status', '=', 'invité')
    .returning('id')
    .executeTakeFirst();
  const licence = await trx
    .updateTable('licences')
    .set({ status: 'activée', activated_at: at })
    .where('membership_id', '=', membershipId)
    .where('org_id', '=', orgId)
    .where('status', '=', 'attribuée')
    .returning('id')
    .executeTakeFirst();
  if (!joined && !licence) return { activated: false, eventId: null };

  const { activatedAt } = await trx.selectNoFrom(parisRfc3339(sql`${at}::timestamptz`).as('activatedAt')).executeTakeFirstOrThrow();
  const event = await recordEvent(trx, {
    orgId,
    type: 'learner.activated',
    data: { learner, activated_at: activatedAt },
  });
  return { activated: true, eventId: event.id };
}
