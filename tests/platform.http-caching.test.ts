import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { bearer } from './support/app';
import { addLearner, createOrgWithKeys } from './support/factories';
import { useTestApp } from './support/lifecycle';

const fixture = useTestApp();
let org: Awaited<ReturnType<typeof createOrgWithKeys>>;

beforeAll(async () => {
  org = await createOrgWithKeys(fixture.db);
  await addLearner(fixture.db, org.orgId, { email: 'anne@exemple.fr', at: '2026-02-01 10:00' });
});

const get = (url: string, headers: Record<string, string> = {}) =>
  fixture.app.inject({ method: 'GET', url, headers: { ...bearer(org.readKey), ...headers } });

describe('conditional requests for polling', () => {
  it('gives list and summary responses an ETag, and 304 for If-None-Match with the current one', async () => {
    for (const url of ['/v1/users', '/v1/summary', '/v1/users?limit=1&offset=0']) {
      const first = await get(url);
      const etag = first.headers.etag as string;
      expect(etag, url).toMatch(/^W\/"[\w-]+"$/);
      const again = await get(url, { 'if-none-match': etag });
      expect(again.statusCode, url).toBe(304);
      expect(again.body).toBe('');
      expect(again.headers['x-ratelimit-remaining']).toBeDefined();
      expect((await get(url, { 'if-none-match': 'W/"autre", ' + etag })).statusCode).toBe(304);
      expect((await get(url, { 'if-none-match': 'W/"perime"' })).statusCode).toBe(200);
    }
  });

  it('changes the ETag when the data changes, not when only generated_at does', async () => {
    const before = (await get('/v1/users')).headers.etag;
    expect((await get('/v1/users')).headers.etag).toBe(before);
    await addLearner(fixture.db, org.orgId, { email: 'basile@exemple.fr', at: '2026-03-01 10:00' });
    const after = await get('/v1/users', { 'if-none-match': before as string });
    expect(after.statusCode).toBe(200);
    expect(after.headers.etag).not.toBe(before);
  });

  it('gives a large page the ETag of its rows too (hashed as they arrive), and follows a change of one of them', async () => {
    const large = await createOrgWithKeys(fixture.db);
    await sql`
      with new_accounts as (
        insert into accounts (email, name)
        select 'apprenant' || i || '@grand.fr', 'Apprenant ' || i from generate_series(1, 1200) i
        returning id
      )
      insert into memberships (org_id, account_id, status, joined_at)
      select ${large.orgId}, id, 'actif', timestamptz '2026-01-05 10:00' from new_accounts`.execute(fixture.db);
    const getLarge = (headers: Record<string, string> = {}) =>
      fixture.app.inject({ method: 'GET', url: '/v1/users?limit=1000', headers: { ...bearer(large.readKey), ...headers } });
    const first = await getLarge();
    expect(first.rawPayload.length).toBeGreaterThan(100_000);
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^W\/"[\w-]{27}"$/);
    expect((await getLarge()).headers.etag).toBe(etag);
    const unchanged = await getLarge({ 'if-none-match': etag });
    expect(unchanged.statusCode).toBe(304);
    expect(unchanged.body).toBe('');
    await sql`update accounts set name = 'Apprenant renommé' where email = 'apprenant1@grand.fr'`.execute(fixture.db);
    const changed = await getLarge({ 'if-none-match': etag });
    expect(changed.statusCode).toBe(200);
    expect(changed.headers.etag).not.toBe(etag);
    expect(changed.json().data.some((row: { nom: string }) => row.nom === 'Apprenant renommé')).toBe(true);
  });

  it('sends the IETF RateLimit fields beside X-RateLimit-*, consistent with them', async () => {
    const response = await get('/v1/summary');
    const remaining = Number(response.headers['x-ratelimit-remaining']);
    expect(response.headers['ratelimit-policy']).toBe('"par-cle";q=120;w=60');
    const match = /^"par-cle";r=(\d+);t=(\d+)$/.exec(response.headers.ratelimit as string);
    expect(match).not.toBeNull();
    expect(Number(match![1])).toBe(remaining);
    expect(Number(match![2])).toBeGreaterThanOrEqual(1);
    expect(Number(match![2])).toBeLessThanOrEqual(61);
  });
});
