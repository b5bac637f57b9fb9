import { sql } from 'kysely';
import type { DB } from './connection';
import type { LicenceType } from './tables';

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
