import { describe, expect, it } from 'vitest';
import { admin, adminFailure } from './support/admin';
import { bearer, buildTestApp } from './support/app';
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
      expect(await admin(database.url, ['key', 'revoke', '--id', key.id])).toEqual({ id: key.id, revoked: true });
      expect((await app.inject({ url: '/v1/summary', headers: bearer(key.key) })).statusCode).toBe(401);
    } finally {
      await app.close();
    }
  }, 120_000);

  it('refuse bad arguments with a clear message and exit code 2', async () => {
    const cases: [string[], RegExp][] = [
      [['org', 'create'], /--name est obligatoire/],
      [['org', 'create', '--name', 'X', '--domains', 'pas un domaine'], /Domaine invalide/],
      [['licences', 'add', '--org', 'abc', '--type', 'standard', '--count', '1'], /UUID/],
      [['licences', 'add', '--org', '00000000-0000-4000-8000-000000000000', '--type', 'or', '--count', '1'], /standard ou tutorat/],
      [
        ['licences', 'add', '--org', '00000000-0000-4000-8000-000000000000', '--type', 'standard', '--count', '-3'],
        /Valeur de --count commençant par un tiret : écrivez --count=VALEUR/,
      ],
      [['org', 'create', '--nom', 'X'], /Option inconnue : --nom\./],
      [['org', 'create', 'Dupont'], /Argument inattendu : « Dupont »/],
      [['org', 'create', '--name'], /L’option --name attend une valeur/],
      [['org', 'create', '--name', 'X', '--json=oui'], /L’option --json ne prend pas de valeur/],
      [['key', 'create', '--org', '00000000-0000-4000-8000-000000000000'], /Aucune organisation/],
      [['key', 'create', '--org', '00000000-0000-4000-8000-000000000000', '--expires', '2026-02-30'], /AAAA-MM-JJ/],
      [['key', 'revoke', '--id', '00000000-0000-4000-8000-000000000000'], /Aucune clé/],
      [['nimporte', 'quoi'], /Commande inconnue/],
    ];
    // Each case is a process of its own (tsx start-up): run them side by side.
    const failures = await Promise.all(cases.map(([args]) => adminFailure(database.url, args)));
    cases.forEach(([args, message], i) => {
      expect(failures[i]!.code, args.join(' ')).toBe(2);
      expect(failures[i]!.stderr, args.join(' ')).toMatch(message);
    });
  }, 120_000);
});
