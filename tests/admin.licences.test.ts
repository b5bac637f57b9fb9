import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { activateOnFirstLogin } from '../db/activation';
import { revokeApiKey } from '../db/api-keys';
import { admin, adminFailure, adminText } from './support/admin';
import { bearer } from './support/app';
import { addLearner, addLicences, createKey, createOrgWithKeys } from './support/factories';
import { useTestApp } from './support/lifecycle';

const fixture = useTestApp();
let org: Awaited<ReturnType<typeof createOrgWithKeys>>;
let other: Awaited<ReturnType<typeof createOrgWithKeys>>;
let learners: Record<'active' | 'invited' | 'unlicensed' | 'elsewhere', { userId: string; membershipId: string }>;

beforeAll(async () => {
  org = await createOrgWithKeys(fixture.db, { name: 'Organisme Éole', domains: ['eole.fr'] });
  other = await createOrgWithKeys(fixture.db, { name: 'Formations Dupont' });
  await addLicences(fixture.db, org.orgId, 'standard', 3);
  await addLicences(fixture.db, org.orgId, 'tutorat', 1);
  learners = {
    active: await addLearner(fixture.db, org.orgId, { email: 'ana.roux@eole.fr', licence: { type: 'standard', status: 'activée' } }),
    invited: await addLearner(fixture.db, org.orgId, {
      email: 'bruno.petit@eole.fr',
      status: 'invité',
      licence: { type: 'tutorat', status: 'attribuée' },
    }),
    unlicensed: await addLearner(fixture.db, org.orgId, { email: 'chloe.morel@eole.fr', licence: null }),
    elsewhere: await addLearner(fixture.db, other.orgId, {
      email: 'denis.blanc@dupont.fr',
      licence: { type: 'standard', status: 'activée' },
    }),
  };
});

const users = async (key: string) => (await fixture.app.inject({ url: '/v1/users?limit=100', headers: bearer(key) })).json();
const summary = async (key: string) => (await fixture.app.inject({ url: '/v1/summary', headers: bearer(key) })).json().data;

describe('org list', () => {
  it('lists every organisation with its id, creation date and counts, and filters by name', async () => {
    // A revoked key and an expired one are not usable.
    await revokeApiKey(fixture.db, org.readKeyId);
    await createKey(fixture.db, org.orgId, ['read'], '2020-01-01');
    const listed = (await admin(fixture.url, ['org', 'list'])).organisations;
    expect(listed.map((o: { id: string }) => o.id)).toEqual([org.orgId, other.orgId]);
    expect(listed[0]).toEqual({
      id: org.orgId,
      name: 'Organisme Éole',
      allowed_email_domains: ['eole.fr'],
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      learners: 3,
      licences: 4 + 2,
      available_licences: 4,
      usable_keys: 1,
    });
    expect(listed[1]).toMatchObject({ name: 'Formations Dupont', learners: 1, licences: 1, available_licences: 0, usable_keys: 2 });

    // Case-insensitive, and % or _ in the text are taken literally.
    expect((await admin(fixture.url, ['org', 'list', '--name', 'éOLE'])).organisations.map((o: { id: string }) => o.id)).toEqual([
      org.orgId,
    ]);
    expect((await admin(fixture.url, ['org', 'list', '--name', '%'])).organisations).toEqual([]);
    const { stdout } = await adminText(fixture.url, ['org', 'list', '--name', 'zzz']);
    expect(stdout).toBe('Aucune organisation dont le nom contient « zzz ».\n');
  }, 60_000);
});

describe('licences revoke', () => {
  it('revokes a learner’s live licence: the API shows it revoked, and it frees nothing', async () => {
    const { writeKey } = org;
    const before = await summary(writeKey);
    const revoked = await admin(fixture.url, ['licences', 'revoke', '--org', org.orgId, '--email', 'Ana.Roux@eole.fr']);
    expect(revoked).toEqual({
      org: org.orgId,
      user_id: learners.active.userId,
      email: 'ana.roux@eole.fr',
      licence_id: expect.any(String),
      type: 'standard',
      status: 'révoquée',
      revoked_at: expect.any(String),
      already_revoked: false,
    });
    const rows = (await users(writeKey)).data;
    expect(rows.find((row: { email: string }) => row.email === 'ana.roux@eole.fr')).toMatchObject({
      licence_type: 'standard',
      licence_statut: 'révoquée',
    });
    // Revocation frees nothing: the licence still counts as used, none comes back available.
    const after = await summary(writeKey);
    expect(after.licences).toEqual(before.licences);
    expect(after.utilisateurs).toEqual(before.utilisateurs);

    // By user id: the invited learner's licence, before their first login.
    const byUser = await admin(fixture.url, ['licences', 'revoke', '--org', org.orgId, '--user', learners.invited.userId]);
    expect(byUser).toMatchObject({ email: 'bruno.petit@eole.fr', type: 'tutorat', already_revoked: false });
    // Their first login activates the account, not the revoked licence.
    await fixture.db
      .transaction()
      .execute((trx) => activateOnFirstLogin(trx, { orgId: org.orgId, membershipId: learners.invited.membershipId, at: new Date() }));
    const licence = await sql<{ status: string }>`select status from licences where id = ${byUser.licence_id}`.execute(fixture.db);
    expect(licence.rows[0]!.status).toBe('révoquée');

    const counts = await admin(fixture.url, ['licences', 'list', '--org', org.orgId]);
    expect(counts).toEqual({
      org: org.orgId,
      licences: [
        { type: 'standard', total: 4, available: 3, assigned: 0, activated: 0, revoked: 1 },
        { type: 'tutorat', total: 2, available: 1, assigned: 0, activated: 0, revoked: 1 },
      ],
    });
    // A revoked learner is still a member: enrolling them again uses no licence.
    const again = await fixture.app.inject({
      method: 'POST',
      url: '/v1/users',
      headers: bearer(writeKey),
      payload: { email: 'ana.roux@eole.fr' },
    });
    expect(again.statusCode).toBe(409);
    expect((await summary(writeKey)).licences).toEqual(before.licences);
  }, 60_000);

  it('says so, changing nothing, when the licence is already revoked', async () => {
    const first = await admin(fixture.url, ['licences', 'revoke', '--org', org.orgId, '--email', 'ana.roux@eole.fr']);
    expect(first.already_revoked).toBe(true);
    const { stdout } = await adminText(fixture.url, ['licences', 'revoke', '--org', org.orgId, '--email', 'ana.roux@eole.fr']);
    expect(stdout).toMatch(
      /^La licence standard de ana\.roux@eole\.fr était déjà révoquée depuis le \d{4}-\d\d-\d\d \d\d:\d\d : rien n’a changé\.\n$/,
    );
    const stored = await sql<{ revoked_at: Date }>`select revoked_at from licences where id = ${first.licence_id}`.execute(fixture.db);
    expect(stored.rows[0]!.revoked_at.toISOString()).toBe(first.revoked_at);
  }, 60_000);

  it('refuses an unknown learner, a learner of another organisation, and one without a licence', async () => {
    const missing = '00000000-0000-4000-8000-000000000000';
    const cases: [string[], string][] = [
      [
        ['licences', 'revoke', '--org', org.orgId, '--email', 'personne@eole.fr'],
        'Aucun apprenant personne@eole.fr dans l’organisation « Organisme Éole ».',
      ],
      [
        ['licences', 'revoke', '--org', org.orgId, '--email', 'denis.blanc@dupont.fr'],
        'Aucun apprenant denis.blanc@dupont.fr dans l’organisation « Organisme Éole ».',
      ],
      [
        ['licences', 'revoke', '--org', org.orgId, '--user', learners.elsewhere.userId],
        `Aucun apprenant ${learners.elsewhere.userId} dans l’organisation « Organisme Éole ».`,
      ],
      [
        ['licences', 'revoke', '--org', org.orgId, '--email', 'chloe.morel@eole.fr'],
        'L’apprenant chloe.morel@eole.fr n’a aucune licence : rien à révoquer.',
      ],
      [['licences', 'revoke', '--org', missing, '--email', 'ana.roux@eole.fr'], `Aucune organisation ${missing}.`],
      [['licences', 'revoke', '--org', org.orgId], 'Indiquez l’apprenant par --email ou par --user (son user_id), l’un des deux.'],
      [
        ['licences', 'revoke', '--org', org.orgId, '--email', 'ana.roux@eole.fr', '--user', learners.active.userId],
        'Indiquez l’apprenant par --email ou par --user (son user_id), l’un des deux.',
      ],
      [['licences', 'revoke', '--org', org.orgId, '--user', 'ana'], '--user doit être un identifiant UUID (reçu « ana »).'],
    ];
    for (let start = 0; start < cases.length; start += 4) {
      const batch = cases.slice(start, start + 4);
      const failures = await Promise.all(batch.map(([args]) => adminFailure(fixture.url, args)));
      batch.forEach(([args, message], i) => {
        expect(failures[i]!.code, args.join(' ')).toBe(2);
        expect(failures[i]!.stderr, args.join(' ')).toBe(`${message}\n`);
      });
    }
    // The other organisation's learner kept their licence.
    expect((await users(other.readKey)).data[0].licence_statut).toBe('activée');
    expect(
      (await users(org.writeKey)).data.find((row: { email: string }) => row.email === 'chloe.morel@eole.fr').licence_statut,
    ).toBeNull();
  }, 60_000);
});
