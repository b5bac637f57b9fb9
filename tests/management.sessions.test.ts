import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { bearer, buildTestApp } from './support/app';
import { createOrgWithKeys } from './support/factories';
import { useTestApp } from './support/lifecycle';

// A link opens a session once; the session's cookie calls the management API for its own
// organisation only; its changes need the page's origin and its anti-CSRF token; a read-only
// session changes nothing, and its refused attempts are audited.

const managementToken = 'jeton-de-gestion-de-la-plateforme-0123456789abcdef';
const publicBaseUrl = 'http://localhost:3000';
const fixture = useTestApp({ managementToken, publicBaseUrl, rateLimitPerMinute: 1000 });

async function linkFor(orgId: string, readOnly = false): Promise<string> {
  const answer = await fixture.app.inject({
    method: 'POST',
    url: `/manage/v1/organisations/${orgId}/portal-links`,
    headers: bearer(managementToken),
    payload: { actor_email: 'admin@formations.fr', read_only: readOnly },
  });
  expect(answer.statusCode).toBe(201);
  const url = new URL(answer.json<{ url: string }>().url);
  return `${url.pathname}${url.search}`;
}

/** Opens a link as a browser would: the session cookie it sets. */
async function open(path: string) {
  const answer = await fixture.app.inject({ method: 'GET', url: path });
  return { answer, cookie: answer.cookies.find((cookie) => cookie.name === 'portail_session') };
}

async function sessionOf(orgId: string, readOnly = false) {
  const { answer, cookie } = await open(await linkFor(orgId, readOnly));
  expect(answer.statusCode).toBe(302);
  const headers = { cookie: `portail_session=${cookie!.value}` };
  const session = await fixture.app.inject({ method: 'GET', url: '/manage/v1/session', headers });
  expect(session.statusCode).toBe(200);
  return { headers, session: session.json<{ csrf_token: string; read_only: boolean; organisation: { id: string } }>() };
}

describe('a portal link', () => {
  it('opens a session once: an HttpOnly, SameSite cookie and a redirect to the page; then 410', async () => {
    const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations Session' });
    const path = await linkFor(orgId);
    const { answer, cookie } = await open(path);
    expect(answer.statusCode).toBe(302);
    expect(answer.headers.location).toBe('/integrations/');
    expect(answer.headers['cache-control']).toBe('no-store');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });
    expect(cookie!.maxAge).toBeGreaterThan(86_000);
    const again = await open(path);
    expect(again.answer.statusCode).toBe(410);
    expect(again.answer.body).toContain('Ce lien a déjà servi');
    expect(again.cookie).toBeUndefined();
  });

  it('opens nothing once past its 10 minutes, or when unknown', async () => {
    const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations Lien tardif' });
    const path = await linkFor(orgId);
    await sql`update portal_links set expires_at = now() - interval '1 second' where org_id = ${orgId}`.execute(fixture.db);
    const late = await open(path);
    expect(late.answer.statusCode).toBe(410);
    expect(late.answer.body).toContain('il doit être ouvert dans les 10 minutes');
    const unknown = await open('/integrations/connexion?jeton=inconnu');
    expect(unknown.answer.statusCode).toBe(404);
    expect(unknown.answer.headers['content-security-policy']).toContain("default-src 'none'");
  });
});

describe('a page session', () => {
  it('reads its own organisation, and gets 404 for any other', async () => {
    const mine = await createOrgWithKeys(fixture.db, { name: 'Formations Les Miennes' });
    const theirs = await createOrgWithKeys(fixture.db, { name: 'Formations Les Autres' });
    const { headers, session } = await sessionOf(mine.orgId);
    expect(session).toMatchObject({ organisation: { id: mine.orgId }, read_only: false });
    const own = await fixture.app.inject({ method: 'GET', url: `/manage/v1/organisations/${mine.orgId}/api-keys`, headers });
    expect(own.statusCode).toBe(200);
    const other = await fixture.app.inject({ method: 'GET', url: `/manage/v1/organisations/${theirs.orgId}/api-keys`, headers });
    expect(other.statusCode).toBe(404);
    expect(other.json()).toMatchObject({ code: 'unknown_organisation' });
  });

  it('changes something only from the page’s origin with its anti-CSRF token', async () => {
    const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations CSRF' });
    const { headers, session } = await sessionOf(orgId);
    const create = (extra: Record<string, string>) =>
      fixture.app.inject({
        method: 'POST',
        url: `/manage/v1/organisations/${orgId}/api-keys`,
        headers: { ...headers, ...extra },
        payload: { label: 'Depuis la page' },
      });
    const forgeries: Record<string, string>[] = [
      {},
      { origin: 'https://ailleurs.example' },
      { origin: publicBaseUrl, 'x-csrf-token': 'faux' },
    ];
    for (const forged of forgeries) {
      const refused = await create(forged);
      expect(refused.statusCode, JSON.stringify(forged)).toBe(403);
      expect(refused.json()).toMatchObject({ code: 'csrf_rejected' });
    }
    const crossSite = await create({ origin: publicBaseUrl, 'x-csrf-token': session.csrf_token, 'sec-fetch-site': 'cross-site' });
    expect(crossSite.statusCode).toBe(403);
    const accepted = await create({ origin: publicBaseUrl, 'x-csrf-token': session.csrf_token });
    expect(accepted.statusCode).toBe(201);
    const audit = await fixture.db
      .selectFrom('audit_events')
      .select(['action', 'actor_kind', 'actor_email', 'outcome', 'refusal_code'])
      .where('org_id', '=', orgId)
      .where('action', '=', 'createApiKey')
      .orderBy('id')
      .execute();
    const attempt = { action: 'createApiKey', actor_kind: 'session', actor_email: 'admin@formations.fr' };
    expect(audit).toEqual([
      ...Array(4).fill({ ...attempt, outcome: 'refused', refusal_code: 'csrf_rejected' }),
      { ...attempt, outcome: 'succeeded', refusal_code: null },
    ]);
  });

  it('read-only, reads everything and changes nothing', async () => {
    const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations Lecture seule' });
    const { headers, session } = await sessionOf(orgId, true);
    expect(session.read_only).toBe(true);
    const listed = await fixture.app.inject({ method: 'GET', url: `/manage/v1/organisations/${orgId}/api-keys`, headers });
    expect(listed.statusCode).toBe(200);
    const refused = await fixture.app.inject({
      method: 'POST',
      url: `/manage/v1/organisations/${orgId}/api-keys`,
      headers: { ...headers, origin: publicBaseUrl, 'x-csrf-token': session.csrf_token },
      payload: { label: 'Interdit' },
    });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: 'session_read_only' });
    const keys = await fixture.db.selectFrom('api_keys').select('label').where('org_id', '=', orgId).execute();
    expect(keys.map((key) => key.label)).not.toContain('Interdit');
    const audit = await fixture.db
      .selectFrom('audit_events')
      .select(['action', 'actor_kind', 'outcome', 'refusal_code'])
      .where('org_id', '=', orgId)
      .where('outcome', '=', 'refused')
      .execute();
    expect(audit).toEqual([{ action: 'createApiKey', actor_kind: 'session', outcome: 'refused', refusal_code: 'session_read_only' }]);
  });

  it('may not ask for a link, which only the platform may', async () => {
    const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations Pas de lien' });
    const { headers, session } = await sessionOf(orgId);
    const refused = await fixture.app.inject({
      method: 'POST',
      url: `/manage/v1/organisations/${orgId}/portal-links`,
      headers: { ...headers, origin: publicBaseUrl, 'x-csrf-token': session.csrf_token },
      payload: { actor_email: 'autre@formations.fr' },
    });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: 'platform_only' });
  });

  it('ends when its time is past: 401', async () => {
    const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations Session finie' });
    const { headers } = await sessionOf(orgId);
    await sql`update portal_sessions set expires_at = now() - interval '1 second' where org_id = ${orgId}`.execute(fixture.db);
    const late = await fixture.app.inject({ method: 'GET', url: `/manage/v1/organisations/${orgId}/api-keys`, headers });
    expect(late.statusCode).toBe(401);
    expect(late.json()).toMatchObject({ code: 'session_expired' });
  });
});

describe('secrets in the log', () => {
  it('never holds the link’s token, the session cookie or the anti-CSRF token', async () => {
    const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations Journal' });
    const lines: string[] = [];
    const logged = await buildTestApp(
      fixture.db,
      { logLevel: 'trace', managementToken, publicBaseUrl },
      { logStream: { write: (line: string) => void lines.push(line) } },
    );
    try {
      const link = await logged.inject({
        method: 'POST',
        url: `/manage/v1/organisations/${orgId}/portal-links`,
        headers: bearer(managementToken),
        payload: { actor_email: 'admin@formations.fr' },
      });
      const path = new URL(link.json<{ url: string }>().url);
      const token = path.searchParams.get('jeton')!;
      const opened = await logged.inject({ method: 'GET', url: `${path.pathname}${path.search}` });
      const cookie = opened.cookies.find((candidate) => candidate.name === 'portail_session')!.value;
      const session = await logged.inject({ method: 'GET', url: '/manage/v1/session', headers: { cookie: `portail_session=${cookie}` } });
      const csrf = session.json<{ csrf_token: string }>().csrf_token;
      await logged.inject({
        method: 'POST',
        url: `/manage/v1/organisations/${orgId}/api-keys`,
        headers: { cookie: `portail_session=${cookie}`, origin: publicBaseUrl, 'x-csrf-token': csrf },
        payload: { label: 'Journal' },
      });
      const log = lines.join('');
      expect(log).toContain('jeton=[masqué]');
      for (const secret of [token, cookie, csrf, managementToken]) expect(log).not.toContain(secret);
    } finally {
      await logged.close();
    }
  });
});

describe('a session’s end', () => {
  it('logs out: the cookie is cleared, the session answers 401 from then on, and the logout is audited', async () => {
    const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations Déconnexion' });
    const { headers, session } = await sessionOf(orgId, true);
    const changeHeaders = { ...headers, origin: publicBaseUrl, 'x-csrf-token': session.csrf_token };
    // Without the anti-CSRF token a logout is refused too: a forged page cannot end a session.
    const forged = await fixture.app.inject({
      method: 'DELETE',
      url: '/manage/v1/session',
      headers: { ...headers, origin: publicBaseUrl },
    });
    expect(forged.statusCode).toBe(403);
    // A read-only session may log out.
    const out = await fixture.app.inject({ method: 'DELETE', url: '/manage/v1/session', headers: changeHeaders });
    expect(out.statusCode).toBe(204);
    const cleared = out.cookies.find((cookie) => cookie.name === 'portail_session');
    expect(cleared?.value).toBe('');
    const after = await fixture.app.inject({ method: 'GET', url: '/manage/v1/session', headers });
    expect(after.statusCode).toBe(401);
    expect(after.json()).toMatchObject({ code: 'session_expired' });
    const audit = await fixture.db
      .selectFrom('audit_events')
      .select(['action', 'outcome'])
      .where('org_id', '=', orgId)
      .orderBy('id')
      .execute();
    expect(audit.map((row) => `${row.action} ${row.outcome}`)).toEqual([
      'createPortalLink succeeded',
      'openPortalSession succeeded',
      'endPortalSession refused',
      'endPortalSession succeeded',
    ]);
  });

  it('is revoked by the platform, for one administrator or all: those sessions answer 401, the others go on', async () => {
    const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations Révocation' });
    const first = await sessionOf(orgId);
    const second = await sessionOf(orgId);
    const revoke = (body: object) =>
      fixture.app.inject({
        method: 'POST',
        url: `/manage/v1/organisations/${orgId}/portal-sessions/revoke`,
        headers: bearer(managementToken),
        payload: body,
      });
    expect((await revoke({ actor_email: 'personne@formations.fr' })).json()).toEqual({ revoked: 0 });
    expect((await revoke({ actor_email: 'Admin@Formations.fr' })).json()).toEqual({ revoked: 2 });
    for (const { headers } of [first, second]) {
      const answer = await fixture.app.inject({ method: 'GET', url: '/manage/v1/session', headers });
      expect(answer.statusCode).toBe(401);
    }
    // A session may not revoke sessions: it is the platform's.
    const third = await sessionOf(orgId);
    const bySession = await fixture.app.inject({
      method: 'POST',
      url: `/manage/v1/organisations/${orgId}/portal-sessions/revoke`,
      headers: { ...third.headers, origin: publicBaseUrl, 'x-csrf-token': third.session.csrf_token },
      payload: {},
    });
    expect(bySession.json()).toMatchObject({ code: 'platform_only' });
    expect((await fixture.app.inject({ method: 'GET', url: '/manage/v1/session', headers: third.headers })).statusCode).toBe(200);
  });
});

describe('a read-only session', () => {
  it('reads the webhooks, the log, the overview, the usage and the audit, and every webhook change is refused and audited', async () => {
    const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations Lecture' });
    const created = await fixture.app.inject({
      method: 'POST',
      url: `/manage/v1/organisations/${orgId}/webhook-endpoints`,
      headers: bearer(managementToken),
      payload: { url: 'https://93.184.216.34/webhooks' },
    });
    const endpointId = created.json<{ endpoint: { id: string } }>().endpoint.id;
    const { headers, session } = await sessionOf(orgId, true);
    for (const path of ['webhook-endpoints', 'webhook-deliveries', 'overview', 'api-usage', 'audit-events']) {
      const read = await fixture.app.inject({ method: 'GET', url: `/manage/v1/organisations/${orgId}/${path}`, headers });
      expect(read.statusCode, path).toBe(200);
    }
    const changeHeaders = { ...headers, origin: publicBaseUrl, 'x-csrf-token': session.csrf_token };
    const base = `/manage/v1/organisations/${orgId}/webhook-endpoints`;
    const changes: ['POST' | 'PATCH' | 'DELETE', string, object?][] = [
      ['POST', base, { url: 'https://93.184.216.35/autre' }],
      ['PATCH', `${base}/${endpointId}`, { event_types: ['quiz.completed'] }],
      ['DELETE', `${base}/${endpointId}`],
      ['POST', `${base}/${endpointId}/enable`],
      ['POST', `${base}/${endpointId}/rotate-secret`],
      ['POST', `${base}/${endpointId}/test`],
      ['POST', `${base}/${endpointId}/example`, { event_type: 'quiz.completed' }],
      ['POST', `${base}/${endpointId}/recover`, { since: '2026-01-01T00:00:00Z' }],
      ['POST', `/manage/v1/organisations/${orgId}/webhook-deliveries/${endpointId}/replay`],
    ];
    for (const [method, url, payload] of changes) {
      const answer = await fixture.app.inject({ method, url, headers: changeHeaders, ...(payload ? { payload } : {}) });
      expect(answer.json(), `${method} ${url}`).toMatchObject({ code: 'session_read_only' });
      expect(answer.statusCode).toBe(403);
    }
    const refused = await fixture.db
      .selectFrom('audit_events')
      .select('action')
      .where('org_id', '=', orgId)
      .where('outcome', '=', 'refused')
      .orderBy('id')
      .execute();
    expect(refused.map((row) => row.action)).toEqual([
      'createWebhookEndpoint',
      'updateWebhookEndpoint',
      'deleteWebhookEndpoint',
      'enableWebhookEndpoint',
      'rotateWebhookSecret',
      'sendWebhookTest',
      'sendWebhookExample',
      'recoverWebhookDeliveries',
      'replayWebhookDelivery',
    ]);
    const [endpoint] = await fixture.db.selectFrom('webhook_endpoints').select(['event_types']).where('org_id', '=', orgId).execute();
    expect(endpoint!.event_types).toHaveLength(6);
    expect(await fixture.db.selectFrom('webhook_deliveries').select('id').execute()).toEqual([]);
  });
});

describe('over https', () => {
  it('names the cookie __Host- with Secure when PUBLIC_BASE_URL is https, even behind a proxy not trusted, and clears it the same way', async () => {
    const origin = 'https://api.exemple.fr';
    const app = await buildTestApp(fixture.db, { managementToken, publicBaseUrl: origin, rateLimitPerMinute: 1000 });
    try {
      const { orgId } = await createOrgWithKeys(fixture.db, { name: 'Formations Https' });
      const link = await app.inject({
        method: 'POST',
        url: `/manage/v1/organisations/${orgId}/portal-links`,
        headers: bearer(managementToken),
        payload: { actor_email: 'admin@formations.fr' },
      });
      const url = new URL(link.json<{ url: string }>().url);
      expect(url.origin).toBe(origin);
      const opened = await app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
      const cookie = opened.cookies.find((c) => c.name === '__Host-portail_session');
      expect(cookie).toMatchObject({ secure: true, httpOnly: true, sameSite: 'Strict', path: '/' });
      expect(opened.cookies.find((c) => c.name === 'portail_session')).toBeUndefined();
      const headers = { cookie: `__Host-portail_session=${cookie!.value}` };
      const session = await app.inject({ method: 'GET', url: '/manage/v1/session', headers });
      expect(session.statusCode).toBe(200);
      const out = await app.inject({
        method: 'DELETE',
        url: '/manage/v1/session',
        headers: { ...headers, origin, 'x-csrf-token': session.json<{ csrf_token: string }>().csrf_token },
      });
      expect(out.statusCode).toBe(204);
      // A browser drops a __Host- cookie only when it is cleared with Secure and the same path.
      expect(out.cookies.find((c) => c.name === '__Host-portail_session')).toMatchObject({ value: '', secure: true, path: '/' });
    } finally {
      await app.close();
    }
  });
});

describe('a second link in the same browser', () => {
  it('replaces the browser’s session, which answers 401 from then on, recorded in its own organisation’s audit log', async () => {
    const first = await createOrgWithKeys(fixture.db, { name: 'Formations Première' });
    const second = await createOrgWithKeys(fixture.db, { name: 'Formations Seconde' });
    const { headers } = await sessionOf(first.orgId);
    const replacing = await fixture.app.inject({ method: 'GET', url: await linkFor(second.orgId), headers });
    expect(replacing.statusCode).toBe(302);
    expect((await fixture.app.inject({ method: 'GET', url: '/manage/v1/session', headers })).statusCode).toBe(401);
    const audit = await fixture.db
      .selectFrom('audit_events')
      .select(['action', 'actor_email', 'details'])
      .where('org_id', '=', first.orgId)
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    expect(audit).toMatchObject({ action: 'endPortalSession', actor_email: 'admin@formations.fr', details: { reason: 'replaced' } });
  });
});

describe('the page’s framing', () => {
  it('lets the origins of PORTAL_FRAME_ANCESTORS frame the page, and them only', async () => {
    const app = await buildTestApp(fixture.db, { portalFrameAncestors: ['https://tableau.exemple.fr', 'https://admin.exemple.fr'] });
    try {
      const page = await app.inject({ method: 'GET', url: '/integrations/' });
      expect(page.statusCode).toBe(200);
      expect(page.headers['content-security-policy']).toContain('frame-ancestors https://tableau.exemple.fr https://admin.exemple.fr');
      expect(page.headers['x-frame-options']).toBeUndefined();
    } finally {
      await app.close();
    }
    const closed = await fixture.app.inject({ method: 'GET', url: '/integrations/' });
    expect(closed.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(closed.headers['x-frame-options']).toBe('DENY');
  });
});
