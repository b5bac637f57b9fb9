import { describe, expect, it } from 'vitest';
import { listApiKeys } from '../db/api-keys';
import { formatParisDate } from '../db/paris-time';
import { admin, adminFailure } from './support/admin';
import { bearer, buildTestApp } from './support/app';
import { createOrgWithKeys } from './support/factories';
import { useTestDatabase } from './support/lifecycle';

const database = useTestDatabase();

describe('operator commands', () => {
  it('create an organisation, licences and keys that work on the API', async () => {
    const org = await admin(database.url, ['org', 'create', '--name', 'Organisme Éole', '--domains', 'eole.fr,Partenaire.fr']);
    expect(org).toEqual({ id: expect.any(String), name: 'Organisme Éole' });
    expect(await admin(database.url, ['licences', 'add', '--org', org.id, '--type', 'tutorat', '--count', '7'])).toEqual({
      org: org.id,
      type: 'tutorat',
      added: 7,
    });
    const key = await admin(database.url, ['key', 'create', '--org', org.id, '--write', '--expires', '2099-12-31', '--label', 'ETL']);
    expect(key).toEqual({
      id: expect.any(String),
      key: expect.stringMatching(/^sk_live_[\w-]{43}$/),
      scopes: ['read', 'write'],
      expires_at: '2099-12-31',
    });
    const readOnly = await admin(database.url, ['key', 'create', '--org', org.id]);
    expect(readOnly.scopes).toEqual(['read']);
    expect(readOnly.expires_at).toBeNull();

    const listed = await admin(database.url, ['key', 'list', '--org', org.id]);
    expect(listed.keys).toHaveLength(2);
    expect(JSON.stringify(listed)).not.toContain(key.key);
    expect(listed.keys[0].prefix).toBe(key.key.slice(0, 14));

    const app = await buildTestApp(database.db);
    try {
      const summary = (await app.inject({ url: '/v1/summary', headers: bearer(key.key) })).json();
      expect(summary.meta.org_name).toBe('Organisme Éole');
      expect(summary.data.licences.tutorat).toEqual({ total: 7, disponibles: 7, utilisees: 0 });
      const revoked = await admin(database.url, ['key', 'revoke', '--id', key.id]);
      expect(revoked).toEqual({ id: key.id, revoked: true, revoked_at: expect.any(String), already_revoked: false });
      expect((await app.inject({ url: '/v1/summary', headers: bearer(key.key) })).statusCode).toBe(401);
      // Again: nothing changes, and the answer says so with the first date.
      expect(await admin(database.url, ['key', 'revoke', '--id', key.id])).toEqual({ ...revoked, already_revoked: true });
    } finally {
      await app.close();
    }
  }, 120_000);

  it('refuse a key that would expire before today in Paris, and take one that expires today', async () => {
    const { orgId } = await createOrgWithKeys(database.db, { name: 'Expirations' });
    const today = formatParisDate(new Date());
    // The calendar day before today's Paris date (date arithmetic, whatever the clock change).
    const yesterday = new Date(Date.parse(`${today}T12:00:00Z`) - 24 * 3600 * 1000).toISOString().slice(0, 10);
    for (const past of [yesterday, '2020-01-01']) {
      const refused = await adminFailure(database.url, ['key', 'create', '--org', orgId, '--expires', past]);
      expect(refused.code, past).toBe(2);
      expect(refused.stderr).toContain(`--expires ${past} est déjà passé (nous sommes le ${today}, heure de Paris)`);
    }
    expect((await listApiKeys(database.db, orgId)).length).toBe(2);

    const lastDay = await admin(database.url, ['key', 'create', '--org', orgId, '--expires', today]);
    expect(lastDay.expires_at).toBe(today);
    const app = await buildTestApp(database.db);
    try {
      expect((await app.inject({ url: '/v1/summary', headers: bearer(lastDay.key) })).statusCode).toBe(200);
    } finally {
      await app.close();
    }
  }, 60_000);

  it('refuse bad arguments with a clear French message and exit code 2', async () => {
    const missing = '00000000-0000-4000-8000-000000000000';
    const cases: [string[], RegExp][] = [
      [['org', 'create'], /^L’option --name est obligatoire\.$/m],
      // Every missing required option is said the same way, whatever its reader.
      [['licences', 'add', '--org', missing, '--type', 'standard'], /^L’option --count est obligatoire\.$/m],
      [['licences', 'add', '--org', missing, '--count', '2'], /^L’option --type est obligatoire\.$/m],
      [['key', 'create'], /^L’option --org est obligatoire\.$/m],
      [['org', 'create', '--name', 'X', '--domains', 'pas un domaine'], /Domaine invalide/],
      [['licences', 'add', '--org', 'abc', '--type', 'standard', '--count', '1'], /--org doit être un identifiant UUID \(reçu « abc »\)/],
      [['licences', 'add', '--org', missing, '--type', 'or', '--count', '1'], /--type doit valoir standard ou tutorat \(reçu « or »\)/],
      [
        ['licences', 'add', '--org', missing, '--type', 'standard', '--count', 'dix'],
        /--count doit être un entier positif \(reçu « dix »\)/,
      ],
      [['key', 'create', '--org', missing], /Aucune organisation/],
      [['key', 'create', '--org', missing, '--expires', '2026-02-30'], /--expires doit être une date AAAA-MM-JJ \(reçu « 2026-02-30 »\)/],
      [['key', 'create', '--org', missing, '--expires', '2026-13-01'], /--expires doit être une date AAAA-MM-JJ/],
      [['key', 'revoke', '--id', missing], /Aucune clé/],
      [['seed', '--org', missing, '--learners', '5', '--year', '1999'], /--year doit être une année entre 2000 et 2100 \(reçu « 1999 »\)/],
    ];
    // Each case is a process of its own (tsx start-up): a few side by side.
    for (let start = 0; start < cases.length; start += 4) {
      const batch = cases.slice(start, start + 4);
      const failures = await Promise.all(batch.map(([args]) => adminFailure(database.url, args)));
      batch.forEach(([args, message], i) => {
        expect(failures[i]!.code, args.join(' ')).toBe(2);
        expect(failures[i]!.stderr, args.join(' ')).toMatch(message);
      });
    }
  }, 120_000);
});

describe('the portal link command', () => {
  it('prints a single-use link at the public address, audited as the operator’s, and refuses a bad lifetime or email', async () => {
    const { orgId } = await createOrgWithKeys(database.db, { name: 'Formations Lien opérateur' });
    const environment = { PUBLIC_BASE_URL: 'https://partenaires.example.fr' };
    const link = await admin(
      database.url,
      ['portal', 'link', '--org', orgId, '--as', 'Admin@Formations.fr', '--read-only', '--expires', '2d'],
      environment,
    );
    expect(link).toEqual({
      url: expect.stringMatching(/^https:\/\/partenaires\.example\.fr\/integrations\/connexion\?jeton=[\w-]{43}$/),
      expires_at: expect.any(String),
      session_lifetime_seconds: 172_800,
    });
    const stored = await database.db
      .selectFrom('portal_links')
      .select(['actor_email', 'read_only', 'created_by'])
      .where('org_id', '=', orgId)
      .execute();
    expect(stored).toEqual([{ actor_email: 'admin@formations.fr', read_only: true, created_by: 'operator' }]);
    const audit = await database.db.selectFrom('audit_events').select(['action', 'actor_kind']).where('org_id', '=', orgId).execute();
    expect(audit).toEqual([{ action: 'createPortalLink', actor_kind: 'operator' }]);

    const tooLong = await adminFailure(database.url, ['portal', 'link', '--org', orgId, '--as', 'admin@formations.fr', '--expires', '10d']);
    expect(tooLong.stderr).toContain('--expires doit être une durée de 1h à 7d (reçu « 10d »)');
    const noEmail = await adminFailure(database.url, ['portal', 'link', '--org', orgId, '--as', 'admin']);
    expect(noEmail.stderr).toContain('--as doit être l’adresse électronique de l’administrateur');
  }, 60_000);
});
