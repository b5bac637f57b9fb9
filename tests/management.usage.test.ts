import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { revokeApiKey } from '../db/api-keys';
import { formatParisDate } from '../db/paris-time';
import { bearer, buildTestApp } from './support/app';
import { createKey, createOrgWithKeys } from './support/factories';
import { useTestDatabase } from './support/lifecycle';
import { startServerProcesses } from './support/server-process';

const database = useTestDatabase();

async function usageRows(keyId: string) {
  return database.db
    .selectFrom('api_key_daily_usage')
    .select(['day', 'accepted', 'rate_limited', 'refused'])
    .where('key_id', '=', keyId)
    .execute();
}

describe('requests per key and per day', () => {
  it('adds up what several servers counted, 429s and a revoked key’s refusals included, written when they stop', async () => {
    const { orgId } = await createOrgWithKeys(database.db, { name: 'Formations Compteurs' });
    const { key, id } = await createKey(database.db, orgId, ['read']);
    // A flush period longer than the test: only the flush at stop writes.
    const servers = await startServerProcesses(2, database.url, { RATE_LIMIT_PER_MINUTE: '10', KEY_USAGE_FLUSH_MS: '600000' });
    try {
      const statuses = await Promise.all(
        Array.from({ length: 15 }, (_, i) => fetch(`${servers[i % 2]!.baseUrl}/summary`, { headers: bearer(key) }).then((r) => r.status)),
      );
      expect(statuses.filter((status) => status === 200)).toHaveLength(10);
      expect(statuses.filter((status) => status === 429)).toHaveLength(5);
      await revokeApiKey(database.db, id);
      for (const server of servers) {
        for (let i = 0; i < 2; i++) expect((await fetch(`${server.baseUrl}/summary`, { headers: bearer(key) })).status).toBe(401);
      }
      expect(await usageRows(id)).toEqual([]);
    } finally {
      await Promise.all(servers.map((server) => server.stop()));
    }
    expect(await usageRows(id)).toEqual([{ day: formatParisDate(new Date()), accepted: 10, rate_limited: 5, refused: 4 }]);
    const { last_used_at } = await database.db.selectFrom('api_keys').select('last_used_at').where('id', '=', id).executeTakeFirstOrThrow();
    expect(last_used_at).toBeInstanceOf(Date);
    expect(Date.now() - last_used_at!.getTime()).toBeLessThan(120_000);
  }, 120_000);

  it('writes every KEY_USAGE_FLUSH_MS while the server runs, a near miss of the key counted against nothing', async () => {
    const { orgId } = await createOrgWithKeys(database.db, { name: 'Formations Périodiques' });
    const { key, id } = await createKey(database.db, orgId, ['read']);
    const app = await buildTestApp(database.db, { keyUsageFlushMs: 50 });
    try {
      for (let i = 0; i < 3; i++) expect((await app.inject({ url: '/v1/summary', headers: bearer(key) })).statusCode).toBe(200);
      await app.inject({ url: '/v1/summary', headers: bearer(`${key.slice(0, -1)}x`) });
      // A flush may fall between the requests: wait for the sum of every flush, not for the first one.
      const deadline = Date.now() + 10_000;
      while (((await usageRows(id))[0]?.accepted ?? 0) < 3 && Date.now() < deadline) await sleep(25);
      expect(await usageRows(id)).toEqual([{ day: formatParisDate(new Date()), accepted: 3, rate_limited: 0, refused: 0 }]);
    } finally {
      await app.close();
    }
  });
});
