import { sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it, vi } from 'vitest';
import { findKeyAndCountRequests } from '../db/api-keys';
import { createDb } from '../db/connection';
import { formatParisDate, formatParisDateTime } from '../db/paris-time';
import { countResourceRows } from '../db/resources/list';
import { usersResource } from '../db/resources/users';
import { hashApiKey } from '../src/api-keys';
import { jsonEtag } from '../src/http/conditional-requests';
import { createRequestCounter } from '../src/http/request-counter';
import { addLearner, createKey, createOrgWithKeys } from './support/factories';
import { useTestDatabase } from './support/lifecycle';
import { readResourcePage } from './support/resource-pages';

// What every request goes through, made cheap (docs/performance.md): each shortcut must keep the
// answers exactly what the plain way gives.

const database = useTestDatabase();

/** A database handle, and the key statements that every handle's connections have sent since (pg's `name` option). */
function countingDb() {
  const counted = { statements: 0 };
  const query = pg.Client.prototype.query;
  const spy = vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
    if ((args[0] as { name?: string } | undefined)?.name === 'api_key_request') counted.statements += 1;
    return (query as (...rest: unknown[]) => unknown).apply(this, args);
  } as typeof query);
  const db = createDb(database.url, { poolSize: 5 });
  return {
    db,
    counted,
    async destroy() {
      spy.mockRestore();
      await db.destroy();
    },
  };
}

describe('counting requests of a key', () => {
  it('counts the requests that arrive together in one statement, each with its own place in the window', async () => {
    const { readKey } = await createOrgWithKeys(database.db);
    const { db, counted, destroy } = countingDb();
    try {
      const countRequest = createRequestCounter(db, 25, 60);
      const lookups = await Promise.all(Array.from({ length: 30 }, () => countRequest(hashApiKey(readKey))));
      // The first goes alone; the 29 that arrived while it was in flight go together.
      expect(counted.statements).toBe(2);
      // The first 25 are accepted, in order, each with the places left after it; the last 5 refused.
      expect(lookups.map((lookup) => (lookup!.verdict!.accepted ? lookup!.verdict!.remaining : -1))).toEqual([
        ...Array.from({ length: 25 }, (_, i) => 24 - i),
        -1,
        -1,
        -1,
        -1,
        -1,
      ]);
      // The kept sum and the counters agree.
      const stored = await sql<{ total: number; counted: number }>`select in_window as total,
          (select sum(c) from unnest(counts || current_count) c)::int as counted
        from rate_limit_slots where bucket = ${`key:${lookups[0]!.id}`}`.execute(database.db);
      expect(stored.rows).toEqual([{ total: 25, counted: 25 }]);
    } finally {
      await destroy();
    }
  });

  it('answers every waiting request for an unknown or revoked key, and counts nothing for them', async () => {
    const { orgId } = await createOrgWithKeys(database.db);
    const revoked = await createKey(database.db, orgId, ['read']);
    await database.db.updateTable('api_keys').set({ revoked_at: new Date() }).where('id', '=', revoked.id).execute();
    const { db, destroy } = countingDb();
    try {
      const countRequest = createRequestCounter(db, 120, 60);
      const unknown = await Promise.all(Array.from({ length: 5 }, () => countRequest(hashApiKey('sk_live_inconnue'))));
      expect(unknown).toEqual([null, null, null, null, null]);
      const refused = await Promise.all(Array.from({ length: 5 }, () => countRequest(hashApiKey(revoked.key))));
      expect(refused.every((lookup) => lookup!.revoked && lookup!.verdict === null)).toBe(true);
      const stored = await sql`select 1 from rate_limit_slots where bucket = ${`key:${revoked.id}`}`.execute(database.db);
      expect(stored.rows).toEqual([]);
    } finally {
      await destroy();
    }
  });

  it('prepares the key statement once per connection', async () => {
    const { readKey } = await createOrgWithKeys(database.db);
    const db = createDb(database.url, { poolSize: 1 });
    try {
      for (let i = 0; i < 3; i += 1) await findKeyAndCountRequests(db, hashApiKey(readKey), 1, 120, 60);
      const prepared = await sql<{ name: string; executions: number }>`
        select name, (generic_plans + custom_plans)::int as executions from pg_prepared_statements`.execute(db);
      expect(prepared.rows).toEqual([{ name: 'api_key_request', executions: 3 }]);
    } finally {
      await db.destroy();
    }
  });

  it('keeps rate-limit counters out of the WAL (an unlogged table)', async () => {
    const table = await sql<{ relpersistence: string }>`select relpersistence from pg_class where relname = 'rate_limit_slots'`.execute(
      database.db,
    );
    expect(table.rows).toEqual([{ relpersistence: 'u' }]);
  });
});

describe('pages and counts', () => {
  it('show new data at once, and each organisation its own', async () => {
    const [first, second] = [await createOrgWithKeys(database.db), await createOrgWithKeys(database.db)];
    await addLearner(database.db, first.orgId, { email: 'alice@exemple.fr' });
    await addLearner(database.db, second.orgId, { email: 'bruno@exemple.fr' });
    const filterOf = (orgId: string) => ({ orgId, year: 2026, updatedSince: null, membershipId: null, programmeId: null });
    const emails = async (orgId: string) =>
      (await readResourcePage(database.db, usersResource, filterOf(orgId), 100, 0, 1000)).map((row) => row.email);

    expect(await emails(first.orgId)).toEqual(['alice@exemple.fr']);
    expect(await emails(second.orgId)).toEqual(['bruno@exemple.fr']);
    await addLearner(database.db, first.orgId, { email: 'amandine@exemple.fr', at: '2026-04-01 10:00' });
    expect(await emails(first.orgId)).toEqual(['alice@exemple.fr', 'amandine@exemple.fr']);
    expect(await countResourceRows(database.db, usersResource as never, filterOf(first.orgId), 1000)).toEqual({
      total: 2,
      truncated: false,
    });
    expect(await countResourceRows(database.db, usersResource as never, filterOf(first.orgId), 1)).toEqual({ total: 1, truncated: true });
  });
});

describe('the ETag of a JSON body', () => {
  const body = (generatedAt: string, email: string) =>
    Buffer.from(
      JSON.stringify({
        resource: 'users',
        meta: { org_name: 'Écoles réunies', generated_at: generatedAt },
        data: [{ email }],
      }),
    );

  it('ignores generated_at, whatever the characters before it, and follows the data', () => {
    expect(jsonEtag(body('2026-11-22 09:00', 'a@exemple.fr'))).toBe(jsonEtag(body('2026-11-22 09:01', 'a@exemple.fr')));
    expect(jsonEtag(body('2026-11-22 09:00', 'a@exemple.fr'))).not.toBe(jsonEtag(body('2026-11-22 09:00', 'b@exemple.fr')));
    expect(jsonEtag(Buffer.from('{"data":[]}'))).toMatch(/^W\/"[\w-]{27}"$/);
  });
});

describe('Paris time of the minute', () => {
  it('stays right across minutes, days and the changes of offset, whatever the order of the calls', () => {
    const cases: [string, string][] = [
      ['2026-03-29T00:59:59Z', '2026-03-29 01:59'],
      ['2026-03-29T01:00:00Z', '2026-03-29 03:00'],
      ['2026-10-25T00:59:00Z', '2026-10-25 02:59'],
      ['2026-10-25T01:00:00Z', '2026-10-25 02:00'],
      ['2026-12-31T22:59:59Z', '2026-12-31 23:59'],
      ['2026-12-31T23:00:00Z', '2027-01-01 00:00'],
    ];
    for (const round of [cases, [...cases].reverse(), cases]) {
      for (const [instant, paris] of round) {
        expect(formatParisDateTime(new Date(instant))).toBe(paris);
        expect(formatParisDate(new Date(instant))).toBe(paris.slice(0, 10));
      }
    }
  });
});
