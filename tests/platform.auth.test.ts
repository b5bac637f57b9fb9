import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { findKeyAndCountRequests, revokeApiKey } from '../db/api-keys';
import { createDb } from '../db/connection';
import { addLicences } from '../db/organisations';
import { hashApiKey } from '../src/api-keys';
import { anErrorBody, bearer, buildTestApp } from './support/app';
import { addLearner, createKey, createOrgWithKeys } from './support/factories';
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
    expect(response.json()).toEqual(anErrorBody(expect.stringMatching(/Clé API manquante/)));
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

describe('authenticate, then handle', () => {
  // A small budget, so that it runs out within a test.
  const limit = 5;
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await buildTestApp(fixture.db, { rateLimitPerMinute: limit });
  });
  afterAll(async () => {
    await app.close();
  });

  // Each test calls from an address of its own: the refusals of a revoked key count against its address's budget too.
  let address = '';
  beforeEach(({ task }) => {
    address = `10.0.0.${task.suite!.tasks.indexOf(task) + 1}`;
  });
  const read = (key: string, url = '/v1/users?limit=1') => app.inject({ method: 'GET', url, headers: bearer(key), remoteAddress: address });
  /** A key of a fresh organisation with two learners (so that a page of one has a next page), already used once. */
  async function usedKey() {
    const organisation = await createOrgWithKeys(fixture.db);
    for (const email of ['a@exemple.fr', 'b@exemple.fr']) await addLearner(fixture.db, organisation.orgId, { email });
    const { key, id } = await createKey(fixture.db, organisation.orgId, ['read', 'write']);
    expect((await read(key)).statusCode).toBe(200);
    return { ...organisation, key, keyId: id };
  }
  /** Every statement the pool's connections send while `action` runs, in order. */
  async function statementsSentDuring(action: () => Promise<unknown>): Promise<string[]> {
    const sent: string[] = [];
    const query = pg.Client.prototype.query;
    const spy = vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
      const [statement] = args as [string | { text?: string; name?: string }];
      sent.push(typeof statement === 'string' ? statement : [statement?.name, statement?.text].filter(Boolean).join(' '));
      return (query as (...rest: unknown[]) => unknown).apply(this, args);
    } as typeof query);
    try {
      await action();
    } finally {
      spy.mockRestore();
    }
    return sent;
  }
  const isKeyStatement = (statement: string) => statement.includes('from api_keys');
  /** What is left of a refusal: its status, body, and every header but the request id. */
  function refusalOf(response: Awaited<ReturnType<typeof read>>) {
    const { 'x-request-id': _id, date: _date, connection: _connection, 'content-length': _length, ...headers } = response.headers;
    return { status: response.statusCode, body: response.json(), headers };
  }

  it('answers an admitted read with its budget headers', async () => {
    const { key } = await usedKey();
    const response = await read(key);
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toHaveLength(1);
    expect(response.headers['x-ratelimit-remaining']).toBe(String(limit - 2));
    expect(response.headers.ratelimit).toMatch(new RegExp(`^"par-cle";r=${limit - 2};t=\\d+$`));
    expect(response.headers.link).toMatch(/offset=1/);
  });

  it('sends the key and rate-limit statement first, alone, and the page’s statements only after its verdict', async () => {
    const { key } = await usedKey();
    let response: Awaited<ReturnType<typeof read>> | undefined;
    const sent = await statementsSentDuring(async () => {
      response = await read(key);
    });
    expect(response!.statusCode).toBe(200);
    expect(sent.length, sent.join('\n')).toBeGreaterThan(1);
    expect(isKeyStatement(sent[0]!), sent.join('\n')).toBe(true);
    expect(sent.slice(1).some(isKeyStatement), sent.join('\n')).toBe(false);
  });

  it('runs nothing of the handler for a key revoked since its last request: a page, a 400, a 404, an unknown address', async () => {
    for (const [index, url] of [
      '/v1/users?limit=1',
      '/v1/users?limit=0',
      '/v1/logins?email=personne@exemple.fr',
      '/v1/inconnue',
    ].entries()) {
      // Each from its own address: the refusals of a revoked key count against the address's budget.
      address = `10.1.${index}.1`;
      const { key, keyId } = await usedKey();
      await revokeApiKey(fixture.db, keyId);
      let response: Awaited<ReturnType<typeof read>> | undefined;
      const sent = await statementsSentDuring(async () => {
        response = await read(key, url);
      });
      expect(refusalOf(response!), url).toEqual({
        status: 401,
        body: anErrorBody('Clé API révoquée : créez une nouvelle clé depuis le tableau de bord.', 'key_revoked'),
        headers: { 'content-type': 'application/json; charset=utf-8' },
      });
      // The key's statement and the address's count, nothing of the page.
      expect(sent, url).toHaveLength(2);
      expect(isKeyStatement(sent[0]!), url).toBe(true);
      expect(sent[1], url).toMatch(/rate_limit_slots/);
    }
  });

  it('answers 429 with its headers when other servers spent the budget, and runs nothing of the handler', async () => {
    const { key } = await usedKey();
    // Another server process counts the rest of the key's budget.
    await findKeyAndCountRequests(fixture.db, hashApiKey(key), limit, limit, 60);
    let response: Awaited<ReturnType<typeof read>> | undefined;
    const sent = await statementsSentDuring(async () => {
      response = await read(key);
    });
    const refused = refusalOf(response!);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual(
      anErrorBody(expect.stringMatching(/^Trop de requêtes/), 'rate_limited', { retry_after: expect.any(Number) }),
    );
    expect(refused.headers).toEqual({
      'content-type': 'application/json; charset=utf-8',
      'retry-after': String(refused.body.retry_after),
      'x-ratelimit-limit': String(limit),
      'x-ratelimit-remaining': '0',
      'ratelimit-policy': `"par-cle";q=${limit};w=60`,
      ratelimit: `"par-cle";r=0;t=${refused.body.retry_after}`,
    });
    expect(sent).toHaveLength(1);
    expect(isKeyStatement(sent[0]!)).toBe(true);
  });

  it('admits exactly the places left among reads sent at once', async () => {
    const { key } = await usedKey();
    const statuses = (await Promise.all(Array.from({ length: 12 }, () => read(key)))).map((response) => response.statusCode);
    expect(statuses.filter((status) => status === 200)).toHaveLength(limit - 1);
    expect(statuses.filter((status) => status === 429)).toHaveLength(12 - (limit - 1));
  });

  it('serves exports sent at once on a pool of two connections: their counts never wait behind their COPY', async () => {
    const db = createDb(fixture.url, { poolSize: 2 });
    const small = await buildTestApp(db, { rateLimitPerMinute: 1000 });
    let closing = true;
    try {
      const { key, orgId } = await usedKey();
      // Files far larger than a stream's buffers: a COPY holds its connection until its file is read.
      await sql`
        with new_accounts as (
          insert into accounts (email, name)
          select 'export' || i || '@exemple.fr', 'Apprenant ' || i from generate_series(1, 2000) i returning id
        )
        insert into memberships (org_id, account_id, status, joined_at) select ${orgId}, id, 'actif', now() from new_accounts`.execute(
        fixture.db,
      );
      const exportOnce = () => small.inject({ method: 'GET', url: '/v1/users?format=csv', headers: bearer(key) });
      const exports = Promise.all(Array.from({ length: 8 }, exportOnce));
      const stuck = new Promise<'stuck'>((resolve) => setTimeout(() => resolve('stuck'), 10_000).unref());
      const answers = await Promise.race([exports, stuck]);
      // Stuck, the pool never closes: leave it, so that the test fails on this line, not on its timeout.
      if (answers === 'stuck') closing = false;
      expect(answers === 'stuck' ? answers : answers.map((response) => response.statusCode)).toEqual(Array(8).fill(200));
    } finally {
      if (closing) {
        await small.close();
        await db.destroy();
      }
    }
  });

  it('never writes for a write key revoked since its last request: it enrols nobody', async () => {
    const { orgId, key, keyId } = await usedKey();
    await addLicences(fixture.db, orgId, 'standard', 2);
    const enrol = (email: string) =>
      app.inject({
        method: 'POST',
        url: '/v1/users',
        headers: bearer(key),
        payload: { email, programme_slugs: [] },
        remoteAddress: address,
      });
    expect((await enrol('premier@exemple.fr')).statusCode).toBe(201);
    await revokeApiKey(fixture.db, keyId);
    expect((await enrol('second@exemple.fr')).statusCode).toBe(401);
    const enrolled = await fixture.db.selectFrom('accounts').select('email').where('email', '=', 'second@exemple.fr').execute();
    expect(enrolled).toEqual([]);
  });
});
