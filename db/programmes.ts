import type { DB } from './connection';

/** The id of the organisation's programme with that slug, or null. */
export async function findProgrammeId(db: DB, orgId: string, slug: string): Promise<string | null> {
  const row = await db.selectFrom('programmes').select('id').where('org_id', '=', orgId).where('slug', '=', slug).executeTakeFirst();
  return row?.id ?? null;
}
