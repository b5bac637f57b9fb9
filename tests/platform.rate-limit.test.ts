import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './support/database';
import { createOrgWithKeys } from './support/factories';
import { type ServerProcess, startServerProcess } from './support/server-process';

let database: TestDatabase;
let servers: ServerProcess[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  servers = await Promise.all([startServerProcess(database.url), startServerProcess(database.url)]);
}, 60_000);
afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  await database.drop();
});

/** Starts a burst early in a 60 s window, so that the window cannot turn over in the middle of it. */
async function atStartOfWindow(): Promise<void> {
  const secondsIntoWindow = (Date.now() / 1000) % 60;
  if (secondsIntoWindow > 45) await new Promise((resolve) => setTimeout(resolve, (60.5 - secondsIntoWindow) * 1000));
}

async function call(server: ServerProcess, key: string | null, path = '/users?limit=1') {
  const response = await fetch(server.baseUrl + path, { headers: key ? { authorization: `Bearer ${key}` } : {} });
  return { status: response.status, headers: response.headers, body: await response.json() as Record<string, unknown> };
}

describe('rate limit shared by every server process', () => {
  it('refuses the 121st request of a key across two servers, with Retry-After and retry_after', async () => {
    const { readKey } = await createOrgWithKeys(database.db);
    const [first, second] = servers as [ServerProcess, ServerProcess];
    await atStartOfWindow();
    // 120 requests split over both servers, in parallel: all accepted.
    const accepted = await Promise.all(Array.from({ length: 120 }, (_, i) => call(i % 2 ? first : second, readKey)));
    expect(accepted.map((r) => r.status).filter((s) => s !== 200)).toEqual([]);
    const remaining = accepted.map((r) => Number(r.headers.get('x-ratelimit-remaining'))).sort((a, b) => a - b);
    expect(remaining).toEqual(Array.from({ length: 120 }, (_, i) => i));

    for (const server of [first, second]) {
      const refused = await call(server, readKey);
      expect(refused.status).toBe(429);
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(refused.body).toEqual({ error: expect.stringMatching(/Trop de requêtes/), retry_after: retryAfter });
      expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    }
    // Another key of the same organisation has its own budget.
    const { readKey: otherKey } = await createOrgWithKeys(database.db);
    expect((await call(first, otherKey)).status).toBe(200);
  });

  it('accepts exactly 120 of 150 requests sent at once across two servers', async () => {
    // Requests of a key that arrive together are counted together: the batch that crosses the
    // limit must still split into places up to 120 (accepted) and beyond (refused).
    const { readKey } = await createOrgWithKeys(database.db);
    const [first, second] = servers as [ServerProcess, ServerProcess];
    await atStartOfWindow();
    const burst = await Promise.all(Array.from({ length: 150 }, (_, i) => call(i % 2 ? first : second, readKey)));
    expect(burst.filter((r) => r.status === 200)).toHaveLength(120);
    expect(burst.filter((r) => r.status === 429)).toHaveLength(30);
    const remaining = burst.filter((r) => r.status === 200).map((r) => Number(r.headers.get('x-ratelimit-remaining'))).sort((a, b) => a - b);
    expect(remaining).toEqual(Array.from({ length: 120 }, (_, i) => i));
  });

  it('limits calls without a valid key per client address', async () => {
    const [first, second] = servers as [ServerProcess, ServerProcess];
    await atStartOfWindow();
    const guesses = await Promise.all(Array.from({ length: 120 }, (_, i) => call(i % 2 ? first : second, 'sk_live_guess' + i)));
    expect(guesses.every((r) => r.status === 401)).toBe(true);
    const next = await call(first, 'sk_live_guess-again');
    expect(next.status).toBe(429);
    expect(next.body.retry_after).toBeGreaterThanOrEqual(1);
    const noKey = await call(second, null);
    expect(noKey.status).toBe(429);
  });
});
