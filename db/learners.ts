import type { DB } from './connection';

export interface LearnerIdentity {
  membershipId: string;
  userId: string;
  email: string;
}

/** Canonical form of an email everywhere: trimmed, lower-case. */
export function canonicalEmail(email: string): string {
  return email.trim().toLowerCase();
}

/**
 * One learner of the organisation by email (case-insensitive) and/or user id. A learner of another
 * organisation is not found, exactly as one who does not exist.
 */
export async function findLearner(
  db: DB,
  orgId: string,
  by: { email?: string | null; userId?: string | null },
): Promise<LearnerIdentity | null> {
  let query = db
    .selectFrom('memberships as m')
    .select(['m.id as membershipId', 'm.account_id as userId', 'm.email as email'])
    .where('m.org_id', '=', orgId);
  if (by.email) query = query.where('m.email', '=', canonicalEmail(by.email));
  if (by.userId) query = query.where('m.account_id', '=', by.userId);
  return (await query.executeTakeFirst()) ?? null;
}
