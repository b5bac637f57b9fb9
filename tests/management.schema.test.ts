import { type Kysely, Migrator, sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { migrations } from '../db/migrate';
import { createOrgWithKeys } from './support/factories';
import { useTestDatabase } from './support/lifecycle';

const database = useTestDatabase();
const migrationName = '20261128T0400-management';
const previousMigration = Object.keys(migrations)[Object.keys(migrations).indexOf(migrationName) - 1]!;

async function tableNames(db: Kysely<any>): Promise<string[]> {
  const { rows } = await sql<{ table_name: string }>`
    select table_name from information_schema.tables where table_schema = 'public' order by table_name`.execute(db);
  return rows.map((row) => row.table_name);
}

describe('the management migration', () => {
  it('goes down and up again, removing and restoring its tables and the keys’ last use', async () => {
    const migrator = new Migrator({ db: database.db, provider: { getMigrations: async () => migrations } });
    const added = ['api_key_daily_usage', 'audit_events', 'portal_links', 'portal_sessions'];
    expect(await tableNames(database.db)).toEqual(expect.arrayContaining(added));

    const down = await migrator.migrateTo(previousMigration);
    expect(down.error).toBeUndefined();
    expect(down.results?.map((result) => result.migrationName).at(-1)).toBe(migrationName);
    const after = await tableNames(database.db);
    for (const table of added) expect(after).not.toContain(table);
    const { rows } =
      await sql`select 1 from information_schema.columns where table_name = 'api_keys' and column_name = 'last_used_at'`.execute(
        database.db,
      );
    expect(rows).toEqual([]);

    const up = await migrator.migrateToLatest();
    expect(up.error).toBeUndefined();
    expect(up.results?.map((result) => result.migrationName)[0]).toBe(migrationName);
    expect(await tableNames(database.db)).toEqual(expect.arrayContaining(added));
  });

  it('lets one link open one session, and keeps an ended session’s reason with its date', async () => {
    const { orgId } = await createOrgWithKeys(database.db, { name: 'Schéma' });
    const link = await database.db
      .insertInto('portal_links')
      .values({
        org_id: orgId,
        token_hash: Buffer.alloc(32, 1),
        actor_email: 'admin@exemple.fr',
        read_only: false,
        session_lifetime: '1 day',
        created_by: 'platform',
        expires_at: new Date(Date.now() + 600_000),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const session = {
      org_id: orgId,
      link_id: link.id,
      actor_email: 'admin@exemple.fr',
      read_only: false,
      expires_at: new Date(Date.now() + 3_600_000),
    };
    await database.db
      .insertInto('portal_sessions')
      .values({ ...session, token_hash: Buffer.alloc(32, 2) })
      .execute();
    await expect(
      database.db
        .insertInto('portal_sessions')
        .values({ ...session, token_hash: Buffer.alloc(32, 3) })
        .execute(),
    ).rejects.toThrow(/portal_sessions_link_id_key/);
    await expect(
      database.db.updateTable('portal_sessions').set({ ended_at: new Date() }).where('link_id', '=', link.id).execute(),
    ).rejects.toThrow(/check constraint/);
    // A link's email is stored as the platform gave it, trimmed and lower-cased by the caller.
    await expect(
      database.db
        .insertInto('portal_links')
        .values({
          org_id: orgId,
          token_hash: Buffer.alloc(32, 4),
          actor_email: 'Admin@Exemple.fr',
          read_only: true,
          session_lifetime: '1 day',
          created_by: 'operator',
          expires_at: new Date(),
        })
        .execute(),
    ).rejects.toThrow(/portal_links_actor_email_check/);
  });

  it('refuses an audit row whose refusal and outcome disagree', async () => {
    const { orgId } = await createOrgWithKeys(database.db, { name: 'Audit' });
    const row = { org_id: orgId, actor_kind: 'platform' as const, action: 'createApiKey' };
    await expect(
      database.db
        .insertInto('audit_events')
        .values({ ...row, outcome: 'refused', refusal_code: null })
        .execute(),
    ).rejects.toThrow(/audit_events_check|refusal_code/);
    await expect(
      database.db
        .insertInto('audit_events')
        .values({ ...row, outcome: 'succeeded', refusal_code: 'csrf_rejected' })
        .execute(),
    ).rejects.toThrow(/audit_events_check|refusal_code/);
  });
});
