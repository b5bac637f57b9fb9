import { beforeAll, describe, expect, it } from 'vitest';
import { revokeApiKey } from '../db/api-keys';
import { bearer, buildTestApp } from './support/app';
import { createKey, createOrgWithKeys } from './support/factories';
import { useTestApp } from './support/lifecycle';

const fixture = useTestApp();
let org: Awaited<ReturnType<typeof createOrgWithKeys>>;

beforeAll(async () => {
  org = await createOrgWithKeys(fixture.db);
});

const get = (headers: Record<string, string> = {}, url = '/v1/users') => fixture.app.inject({ method: 'GET', url, headers });

describe('API keys', () => {
  it('refuses a request without a key, saying the key is missing', async () => {
    const response = await get();
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({ error: expect.stringMatching(/Clé API manquante/) });
  });

  it('refuses a header that is not a bearer sk_live_ key, and an unknown key', async () => {
    for (const authorization of ['Basic abc', 'Bearer', 'Bearer sk_test_abc', 'sk_live_abc']) {
      const response = await get({ authorization });
      expect(response.statusCode, authorization).toBe(401);
      expect(response.json().error).toMatch(/Clé API invalide/);
    }
    const unknown = await get(bearer('sk_live_' + 'x'.repeat(43)));
    expect(unknown.statusCode).toBe(401);
    expect(unknown.json().error).toMatch(/aucune clé ne correspond/);
  });

  it('accepts a valid key and answers with the rate-limit headers', async () => {
    const response = await get(bearer(org.readKey));
    expect(response.statusCode).toBe(200);
    expect(Number(response.headers['x-ratelimit-limit'])).toBe(120);
    expect(Number(response.headers['x-ratelimit-remaining'])).toBeLessThan(120);
  });

  it('refuses a revoked key from the next request on', async () => {
    const { key, id } = await createKey(fixture.db, org.orgId, ['read']);
    expect((await get(bearer(key))).statusCode).toBe(200);
    await revokeApiKey(fixture.db, id);
    const response = await get(bearer(key));
    expect(response.statusCode).toBe(401);
    expect(response.json().error).toMatch(/révoquée/);
  });

  it('accepts a key through its expiry date and refuses it after', async () => {
    const today = new Intl.DateTimeFormat('en-CA', { timeZone: 'Europe/Paris' }).format(new Date());
    const stillValid = await createKey(fixture.db, org.orgId, ['read'], today);
    expect((await get(bearer(stillValid.key))).statusCode).toBe(200);
    const expired = await createKey(fixture.db, org.orgId, ['read'], '2024-01-31');
    const response = await get(bearer(expired.key));
    expect(response.statusCode).toBe(401);
    expect(response.json().error).toMatch(/expirée depuis le 1 février 2024|expirée depuis le 1er février 2024/);
  });

  it('refuses a read-only key on POST /users with 403, before looking at the body', async () => {
    const response = await fixture.app.inject({
      method: 'POST',
      url: '/v1/users',
      headers: bearer(org.readKey),
      payload: { email: 'a@b.fr' },
    });
    expect(response.statusCode).toBe(403);
    expect(response.json().error).toMatch(/lecture seule/);
  });

  it('authenticates before validating: a bad parameter without a key is a 401, not a 400', async () => {
    expect((await get({}, '/v1/users?limit=0')).statusCode).toBe(401);
  });

  it('serves the document and the docs page without a key', async () => {
    const json = await get({}, '/v1/openapi.json');
    expect(json.statusCode).toBe(200);
    expect(json.json().info.version).toBe('1.1.0');
    const yaml = await get({}, '/v1/openapi.yaml');
    expect(yaml.statusCode).toBe(200);
    expect(yaml.body).toMatch(/^openapi: 3\.1\.0/m);
    const docs = await get({}, '/v1/docs/');
    expect(docs.statusCode).toBe(200);
    expect(docs.headers['content-type']).toMatch(/text\/html/);
  });

  it('keeps keys out of the logs, even at trace level', async () => {
    const lines: string[] = [];
    const logged = await buildTestApp(fixture.db, { logLevel: 'trace' }, { logStream: { write: (line: string) => void lines.push(line) } });
    await logged.inject({ method: 'GET', url: '/v1/users', headers: bearer(org.readKey) });
    await logged.inject({ method: 'GET', url: '/v1/users?limit=0', headers: bearer(org.readKey) });
    await logged.close();
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join('')).not.toContain(org.readKey);
  });
});
