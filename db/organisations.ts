import { sql } from 'kysely';
import type { DB } from './connection';
import type { LicenceStatus, LicenceType } from './tables';

export async function createOrganisation(db: DB, organisation: { name: string; allowedEmailDomains: string[] }) {
  return db
    .insertInto('organisations')
    .values({ name: organisation.name, allowed_email_domains: organisation.allowedEmailDomains })
    .returning(['id', 'name', 'allowed_email_domains'])
    .executeTakeFirstOrThrow();
}

export async function findOrganisation(db: DB, orgId: string) {
  return (await db.selectFrom('organisations').selectAll().where('id', '=', orgId).executeTakeFirst()) ?? null;
}

export async function countOrganisations(db: DB): Promise<number> {
  const row = await db.selectFrom('organisations').select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow();
  return row.n;
}

/** Adds `count` available licences of a type, in one statement. */
export async function addLicences(db: DB, orgId: string, type: LicenceType, count: number): Promise<number> {
  const result = await sql`insert into licences (org_id, type) select ${orgId}, ${type} from generate_series(1, ${count})`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

/**
 * Every organisation, oldest first, with what an operator recognises it by: its learners, its
 * usable keys (neither revoked nor expired) and its licences. `nameContains` keeps the names that
 * contain it, case-insensitively. Each count is an index scan of one organisation's rows.
 */
export async function listOrganisations(db: DB, filter: { nameContains?: string | null } = {}) {
  let query = db.selectFrom('organisations as o').select((eb) => [
    'o.id',
    'o.name',
    'o.allowed_email_domains',
    'o.created_at',
    eb.selectFrom('memberships as m').select(sql<number>`count(*)::int`.as('n')).whereRef('m.org_id', '=', 'o.id').as('learners'),
    eb
      .selectFrom('api_keys as k')
      .select(sql<number>`count(*)::int`.as('n'))
      .whereRef('k.org_id', '=', 'o.id')
      .where('k.revoked_at', 'is', null)
      .where((keys) => keys.or([keys('k.expires_at', 'is', null), keys('k.expires_at', '>', sql<Date>`now()`)]))
      .as('usable_keys'),
    eb.selectFrom('licences as l').select(sql<number>`count(*)::int`.as('n')).whereRef('l.org_id', '=', 'o.id').as('licences'),
    eb
      .selectFrom('licences as l')
      .select(sql<number>`count(*)::int`.as('n'))
      .whereRef('l.org_id', '=', 'o.id')
      .where('l.status', '=', 'disponible')
      .as('available_licences'),
  ]);
  if (filter.nameContains) {
    const pattern = `%${filter.nameContains.replace(/[\\%_]/g, (character) => `\\${character}`)}%`;
    query = query.where('o.name', 'ilike', pattern);
  }
  const rows = await query.orderBy('o.created_at').orderBy('o.id').execute();
  // A scalar count subquery is never null; Kysely types it as possibly so.
  return rows.map((row) => ({
    ...row,
    learners: row.learners ?? 0,
    usable_keys: row.usable_keys ?? 0,
    licences: row.licences ?? 0,
    available_licences: row.available_licences ?? 0,
  }));
}

/** An organisation's licences counted by type and status (every pair, zeros included). */
export async function countLicences(db: DB, orgId: string) {
  const rows = await db
    .selectFrom('licences')
    .select(['type', 'status', sql<number>`count(*)::int`.as('n')])
    .where('org_id', '=', orgId)
    .groupBy(['type', 'status'])
    .execute();
  const types: LicenceType[] = ['standard', 'tutorat'];
  const statuses: LicenceStatus[] = ['disponible', 'attribuée', 'activée', 'révoquée'];
  return types.map((type) => {
    const byStatus = Object.fromEntries(
      statuses.map((status) => [status, rows.find((row) => row.type === type && row.status === status)?.n ?? 0]),
    ) as Record<LicenceStatus, number>;
    return { type, total: statuses.reduce((sum, status) => sum + byStatus[status], 0), byStatus };
  });
}

export interface LicenceRevocation {
  licenceId: string;
  type: LicenceType;
  /** Null only for a licence revoked without a date (imported history). */
  revokedAt: Date | null;
  /** false: the learner's licence was already revoked, and nothing changed (the first date is kept). */
  revokedNow: boolean;
}

/**
 * Revokes a learner's live licence (`attribuée` or `activée` -> `révoquée`), as the dashboard does:
 * the licence stays with the learner, as history, and frees nothing. Idempotent: a learner whose
 * licence is already revoked gets back that revocation, unchanged. Null when the learner never held
 * a licence. One guarded statement: an activation at the same moment waits for its row lock, then
 * finds the licence no longer `attribuée` (docs/decisions.md#licence-states).
 */
export async function revokeLearnerLicence(db: DB, orgId: string, membershipId: string): Promise<LicenceRevocation | null> {
  const revoked = await db
    .updateTable('licences')
    .set({ status: 'révoquée', revoked_at: sql<Date>`now()` as never })
    .where('org_id', '=', orgId)
    .where('membership_id', '=', membershipId)
    .where('status', 'in', ['attribuée', 'activée'])
    .returning(['id', 'type', 'revoked_at'])
    .executeTakeFirst();
  if (revoked) return { licenceId: revoked.id, type: revoked.type, revokedAt: revoked.revoked_at, revokedNow: true };
  const earlier = await db
    .selectFrom('licences')
    .select(['id', 'type', 'revoked_at'])
    .where('org_id', '=', orgId)
    .where('membership_id', '=', membershipId)
    .where('status', '=', 'révoquée')
    .orderBy('revoked_at', (order) => order.desc().nullsLast())
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  return earlier ? { licenceId: earlier.id, type: earlier.type, revokedAt: earlier.revoked_at, revokedNow: false } : null;
}
