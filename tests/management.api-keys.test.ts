import { describe, expect, it } from 'vitest';
import { bearer } from './support/app';
import { createKey, createOrgWithKeys } from './support/factories';
import { useTestApp } from './support/lifecycle';

// The keys of an organisation through the management API, called by the platform's backend with
// its token: created (the whole key shown once), listed without it, revoked, each change audited,
// and nothing of another organisation reachable.

const managementToken = 'jeton-de-gestion-de-la-plateforme-0123456789abcdef';
const fixture = useTestApp({ managementToken, rateLimitPerMinute: 1000 });
const platform = bearer(managementToken);

async function call(method: 'GET' | 'POST', url: string, options: { headers?: Record<string, string>; body?: unknown } = {}) {
  const response = await fixture.app.inject({
    method,
    url: `/manage/v1${url}`,
    headers: { ...platform, ...options.headers },
    ...(options.body === undefined ? {} : { payload: options.body as object }),
  });
  return { status: response.statusCode, headers: response.headers, body: response.json() as Record<string, any> };
}

async function auditOf(orgId: string) {
  return fixture.db
    .selectFrom('audit_events')
    .select(['actor_kind', 'action', 'target_id', 'outcome', 'details'])
    .where('org_id', '=', orgId)
    .orderBy('id')
    .execute();
}

describe('the platform’s caller', () => {
  it('is refused without its token, with another token, or with an organisation’s key', async () => {
    const { orgId, readKey } = await createOrgWithKeys(fixture.db, { name: 'Formations Accès' });
    const none = await call('GET', `/organisations/${orgId}/api-keys`, { headers: { authorization: '' } });
    expect(none).toMatchObject({ status: 401, body: { code: 'credentials_missing' } });
    const wrong = await call('GET', `/organisations/${orgId}/api-keys`, { headers: bearer('pas-le-bon-jeton') });
    expect(wrong).toMatchObject({ status: 401, body: { code: 'management_token_invalid', error: 'Jeton de gestion invalide.' } });
    const key = await call('GET', `/organisations/${orgId}/api-keys`, { headers: bearer(readKey) });
    expect(key).toMatchObject({ status: 401, body: { code: 'management_token_invalid' } });
    expect(key.body.error).toContain('sk_live_');
    // The token is never repeated in an answer.
    expect(JSON.stringify([none, wrong, key])).not.toContain(managementToken);
  });

  it('gets 404 for an organisation that does not exist, and every answer is no-store', async () => {
    const unknown = await call('GET', '/organisations/00000000-0000-4000-8000-000000000000/api-keys');
    expect(unknown).toMatchObject({ status: 404, body: { code: 'unknown_organisation', error: 'Organisation inconnue.' } });
    expect(unknown.headers['cache-control']).toBe('no-store');
    const malformed = await call('GET', '/organisations/pas-un-uuid/api-keys');
    expect(malformed).toMatchObject({ status: 400, body: { code: 'invalid_parameter', param: 'org_id' } });
  });
});

describe('keys', () => {
  it('creates a key shown whole once, which then works on /v1 and is listed without it', async () => {
    const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations Création' });
    const created = await call('POST', `/organisations/${orgId}/api-keys`, {
      body: { label: 'Entrepôt de données', scopes: ['read', 'write'], expires_on: '2099-12-31' },
    });
    expect(created.status).toBe(201);
    expect(created.headers['cache-control']).toBe('no-store');
    expect(created.body.key).toMatch(/^sk_live_/);
    expect(created.body.api_key).toMatchObject({
      label: 'Entrepôt de données',
      scopes: ['read', 'write'],
      expires_on: '2099-12-31',
      revoked_at: null,
      last_used_at: null,
      state: 'active',
      prefix: created.body.key.slice(0, 14),
    });
    const summary = await fixture.app.inject({ method: 'GET', url: '/v1/summary', headers: bearer(created.body.key) });
    expect(summary.statusCode).toBe(200);

    const listed = await call('GET', `/organisations/${orgId}/api-keys`);
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((key: { id: string }) => key.id)).toContain(created.body.api_key.id);
    expect(JSON.stringify(listed.body)).not.toContain(created.body.key);
    expect(await auditOf(orgId)).toEqual([
      {
        actor_kind: 'platform',
        action: 'createApiKey',
        target_id: created.body.api_key.id,
        outcome: 'succeeded',
        details: { label: 'Entrepôt de données', scopes: ['read', 'write'], expires_on: '2099-12-31' },
      },
    ]);
  });

  it('refuses a bad body naming the field, and an expiry already past', async () => {
    const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations Refus' });
    const noLabel = await call('POST', `/organisations/${orgId}/api-keys`, { body: { scopes: ['read'] } });
    expect(noLabel).toMatchObject({ status: 400, body: { code: 'invalid_body', param: 'label' } });
    const badScope = await call('POST', `/organisations/${orgId}/api-keys`, { body: { label: 'x', scopes: ['admin'] } });
    expect(badScope).toMatchObject({ status: 400, body: { code: 'invalid_body', param: 'scopes[0]' } });
    const past = await call('POST', `/organisations/${orgId}/api-keys`, { body: { label: 'x', expires_on: '2020-01-01' } });
    expect(past).toMatchObject({ status: 400, body: { code: 'invalid_body', param: 'expires_on' } });
    expect(past.body.error).toContain('2020-01-01 est déjà passé');
    const listed = await call('GET', `/organisations/${orgId}/api-keys`);
    // The organisation's own two keys (its factory's), nothing created by the refusals.
    expect(listed.body.data).toHaveLength(2);
  });

  it('revokes a key, which /v1 then refuses; revoking again keeps the first date', async () => {
    const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations Révocation' });
    const { key, id } = await createKey(fixture.db, orgId, ['read']);
    const revoked = await call('POST', `/organisations/${orgId}/api-keys/${id}/revoke`);
    expect(revoked).toMatchObject({ status: 200, body: { already_revoked: false, api_key: { id, state: 'revoked' } } });
    const summary = await fixture.app.inject({ method: 'GET', url: '/v1/summary', headers: bearer(key) });
    expect(summary.statusCode).toBe(401);
    const again = await call('POST', `/organisations/${orgId}/api-keys/${id}/revoke`);
    expect(again).toMatchObject({ status: 200, body: { already_revoked: true } });
    expect(again.body.api_key.revoked_at).toBe(revoked.body.api_key.revoked_at);
    expect((await auditOf(orgId)).map((event) => [event.action, event.details])).toEqual([
      ['revokeApiKey', { label: 'test', already_revoked: false }],
      ['revokeApiKey', { label: 'test', already_revoked: true }],
    ]);
  });

  it('never reaches another organisation’s key: 404, the key untouched', async () => {
    const mine = await createOrgWithKeys(fixture.db, { name: 'Formations Miennes' });
    const theirs = await createOrgWithKeys(fixture.db, { name: 'Formations Autres' });
    const { key, id } = await createKey(fixture.db, theirs.orgId, ['read']);
    const probe = await call('POST', `/organisations/${mine.orgId}/api-keys/${id}/revoke`);
    expect(probe).toMatchObject({ status: 404, body: { code: 'unknown_api_key' } });
    const listed = await call('GET', `/organisations/${mine.orgId}/api-keys`);
    expect(listed.body.data.map((row: { id: string }) => row.id)).not.toContain(id);
    const summary = await fixture.app.inject({ method: 'GET', url: '/v1/summary', headers: bearer(key) });
    expect(summary.statusCode).toBe(200);
    expect(await auditOf(mine.orgId)).toEqual([]);
  });

  it('pages keys newest first by cursor, filters by state, and refuses a forged cursor', async () => {
    const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations Pages' });
    // Created in parallel: every one gets its own key and its own audit line.
    const created = await Promise.all(
      Array.from({ length: 7 }, (_, i) => call('POST', `/organisations/${orgId}/api-keys`, { body: { label: `clé ${i}` } })),
    );
    expect(new Set(created.map((answer) => answer.body.key)).size).toBe(7);
    await call('POST', `/organisations/${orgId}/api-keys/${created[0]!.body.api_key.id}/revoke`);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await call('GET', `/organisations/${orgId}/api-keys?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      seen.push(...page.body.data.map((row: { id: string }) => row.id));
      cursor = page.body.next_cursor;
      expect(page.body.has_more).toBe(cursor !== null);
    } while (cursor);
    // The 7 created and the factory's 2, each once.
    expect(seen).toHaveLength(9);
    expect(new Set(seen).size).toBe(9);
    const revoked = await call('GET', `/organisations/${orgId}/api-keys?state=revoked`);
    expect(revoked.body.data.map((row: { id: string }) => row.id)).toEqual([created[0]!.body.api_key.id]);
    const forged = await call('GET', `/organisations/${orgId}/api-keys?cursor=bm9u`);
    expect(forged).toMatchObject({ status: 400, body: { code: 'invalid_parameter', param: 'cursor' } });
    expect((await auditOf(orgId)).filter((event) => event.action === 'createApiKey')).toHaveLength(7);
  });
});
