import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createPortalLink, redeemPortalLink, whyNotRedeemed } from '../db/portal';
import { hashSecretToken } from '../src/portal';
import { bearer } from './support/app';
import { createOrgWithKeys } from './support/factories';
import { useTestAppOn, useTestDatabase } from './support/lifecycle';

// A link opens one session, once, within its 10 minutes, whatever the number of tries at once.

const database = useTestDatabase();
const managementToken = 'jeton-de-gestion-de-la-plateforme-0123456789abcdef';
const fixture = useTestAppOn(database, { managementToken, publicBaseUrl: 'https://partenaires.example.fr' });
const tokenHash = () => createHash('sha256').update(randomBytes(32)).digest();

async function newLink(orgId: string, sessionLifetimeSeconds = 3600) {
  const linkHash = tokenHash();
  const link = await createPortalLink(database.db, {
    orgId,
    tokenHash: linkHash,
    actorEmail: 'admin@formations.fr',
    readOnly: false,
    sessionLifetimeSeconds,
    createdBy: 'platform',
  });
  return { ...link, linkHash };
}

describe('portal links', () => {
  it('open one session, whatever the number of redemptions at once', async () => {
    const { orgId } = await createOrgWithKeys(database.db, { name: 'Formations Liens' });
    const { linkHash, expiresAt } = await newLink(orgId, 7200);
    expect(expiresAt.getTime() - Date.now()).toBeGreaterThan(9 * 60_000);
    expect(expiresAt.getTime() - Date.now()).toBeLessThanOrEqual(10 * 60_000 + 5_000);
    const sessions = await Promise.all(Array.from({ length: 20 }, () => redeemPortalLink(database.db, linkHash, tokenHash())));
    const opened = sessions.filter((session) => session !== null);
    expect(opened).toHaveLength(1);
    expect(opened[0]).toMatchObject({ orgId, actorEmail: 'admin@formations.fr', readOnly: false });
    const lifetime = opened[0]!.expiresAt.getTime() - Date.now();
    expect(lifetime).toBeGreaterThan(7100_000);
    expect(lifetime).toBeLessThanOrEqual(7200_000);
    const rows = await database.db.selectFrom('portal_sessions').select('id').where('org_id', '=', orgId).execute();
    expect(rows).toHaveLength(1);
    expect(await whyNotRedeemed(database.db, linkHash)).toBe('used');
  });

  it('open nothing once past their 10 minutes, or when unknown, and say which', async () => {
    const { orgId } = await createOrgWithKeys(database.db, { name: 'Formations Liens expirés' });
    const { id, linkHash } = await newLink(orgId);
    await sql`update portal_links set expires_at = now() - interval '1 second' where id = ${id}`.execute(database.db);
    expect(await redeemPortalLink(database.db, linkHash, tokenHash())).toBeNull();
    expect(await whyNotRedeemed(database.db, linkHash)).toBe('expired');
    const unknown = tokenHash();
    expect(await redeemPortalLink(database.db, unknown, tokenHash())).toBeNull();
    expect(await whyNotRedeemed(database.db, unknown)).toBe('unknown');
  });

  it('store only the hashes of the link’s token and of the session’s', async () => {
    const { orgId } = await createOrgWithKeys(database.db, { name: 'Formations Empreintes' });
    const token = randomBytes(32);
    const linkHash = createHash('sha256').update(token).digest();
    await createPortalLink(database.db, {
      orgId,
      tokenHash: linkHash,
      actorEmail: 'admin@formations.fr',
      readOnly: true,
      sessionLifetimeSeconds: 3600,
      createdBy: 'operator',
    });
    const stored = await database.db.selectFrom('portal_links').select('token_hash').where('org_id', '=', orgId).execute();
    expect(stored.map((row) => row.token_hash.equals(token))).toEqual([false]);
    expect(stored.map((row) => row.token_hash.equals(linkHash))).toEqual([true]);
  });
});

describe('createPortalLink', () => {
  const create = (orgId: string, body: unknown) =>
    fixture.app.inject({
      method: 'POST',
      url: `/manage/v1/organisations/${orgId}/portal-links`,
      headers: bearer(managementToken),
      payload: body as object,
    });

  it('gives the platform a link at the public address, whose token only the answer holds, and audits it', async () => {
    const { orgId } = await createOrgWithKeys(database.db, { name: 'Formations Portail' });
    const answer = await create(orgId, { actor_email: 'Admin@Formations.fr', read_only: true, session_lifetime_seconds: 7200 });
    expect(answer.statusCode).toBe(201);
    expect(answer.headers['cache-control']).toBe('no-store');
    const link = answer.json() as { url: string; expires_at: string; session_lifetime_seconds: number };
    const url = new URL(link.url);
    expect(`${url.origin}${url.pathname}`).toBe('https://partenaires.example.fr/integrations/connexion');
    const token = url.searchParams.get('jeton')!;
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(link.session_lifetime_seconds).toBe(7200);
    expect(new Date(link.expires_at).getTime() - Date.now()).toBeGreaterThan(9 * 60_000);
    const stored = await database.db
      .selectFrom('portal_links')
      .select(['token_hash', 'actor_email', 'read_only', 'created_by'])
      .where('org_id', '=', orgId)
      .execute();
    expect(stored).toEqual([
      { token_hash: hashSecretToken(token), actor_email: 'admin@formations.fr', read_only: true, created_by: 'platform' },
    ]);
    const audit = await database.db
      .selectFrom('audit_events')
      .select(['action', 'actor_kind', 'details'])
      .where('org_id', '=', orgId)
      .execute();
    expect(audit).toEqual([
      {
        action: 'createPortalLink',
        actor_kind: 'platform',
        details: { actor_email: 'admin@formations.fr', read_only: true, session_lifetime_seconds: 7200 },
      },
    ]);
    expect(JSON.stringify(audit)).not.toContain(token);
  });

  it('refuses a bad email or lifetime naming the field, and an unknown organisation', async () => {
    const { orgId } = await createOrgWithKeys(database.db, { name: 'Formations Portail refusé' });
    const email = await create(orgId, { actor_email: 'pas une adresse' });
    expect(email.statusCode).toBe(400);
    expect(email.json()).toMatchObject({ code: 'invalid_body', param: 'actor_email' });
    const lifetime = await create(orgId, { actor_email: 'admin@formations.fr', session_lifetime_seconds: 60 });
    expect(lifetime.json()).toMatchObject({ code: 'invalid_body', param: 'session_lifetime_seconds' });
    const unknown = await create('00000000-0000-4000-8000-000000000000', { actor_email: 'admin@formations.fr' });
    expect(unknown.statusCode).toBe(404);
    expect(await database.db.selectFrom('portal_links').select('id').where('org_id', '=', orgId).execute()).toEqual([]);
  });
});
