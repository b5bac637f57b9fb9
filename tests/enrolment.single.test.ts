import { describe, expect, it } from 'vitest';
import { formatParisDate } from '../db/paris-time';
import { enrolmentHarness, type Org } from './enrolment.helpers';
import { bearer } from './support/app';
import { addLearner } from './support/factories';
import { useTestApp } from './support/lifecycle';

const fixture = useTestApp();

const { newOrg, enrol, expectRefused } = enrolmentHarness(fixture);
const get = (org: Org, url: string) => fixture.app.inject({ method: 'GET', url, headers: bearer(org.readKey) }).then((r) => r.json());

async function addProgramme(orgId: string, slug: string) {
  return fixture.db
    .insertInto('programmes')
    .values({ org_id: orgId, slug, title: `Programme ${slug}` })
    .returning('id')
    .executeTakeFirstOrThrow();
}

const today = () => formatParisDate(new Date());

describe('POST /users, one learner', () => {
  it('invites an unknown email: 201 pending, a standard licence attribuée, learner.enrolled recorded', async () => {
    const org = await newOrg();
    const response = await enrol(org, { email: 'hugo.bernard@exemple.fr' });
    expect(response.statusCode).toBe(201);
    const body = response.json();
    expect(body).toEqual({
      member: {
        id: expect.any(String),
        user_id: expect.any(String),
        email: 'hugo.bernard@exemple.fr',
        nom: null,
        statut: 'invité',
        licence_type: 'standard',
        programmes: [],
        inscrit_le: today(),
      },
      status: 'pending',
    });
    expect(Object.keys(body.member)).toEqual(['id', 'user_id', 'email', 'nom', 'statut', 'licence_type', 'programmes', 'inscrit_le']);
    const licence = await fixture.db
      .selectFrom('licences')
      .selectAll()
      .where('membership_id', '=', body.member.id)
      .executeTakeFirstOrThrow();
    expect(licence).toMatchObject({ status: 'attribuée', type: 'standard', org_id: org.orgId });
    expect(licence.assigned_at).toBeInstanceOf(Date);
    const membership = await fixture.db.selectFrom('memberships').selectAll().where('id', '=', body.member.id).executeTakeFirstOrThrow();
    expect(membership).toMatchObject({ status: 'invité', joined_at: null, account_id: body.member.user_id });
    const events = await fixture.db.selectFrom('events').select(['type', 'data']).where('org_id', '=', org.orgId).execute();
    expect(events).toEqual([
      {
        type: 'learner.enrolled',
        data: {
          learner: { user_id: body.member.user_id, email: 'hugo.bernard@exemple.fr', name: null },
          status: 'pending',
          programmes: [],
        },
      },
    ]);
  });

  it('attaches an existing account at once: 201 active, statut actif, the same user_id and name', async () => {
    const elsewhere = await newOrg();
    const { userId } = await addLearner(fixture.db, elsewhere.orgId, { email: 'claire.martin@exemple.fr', name: 'Claire Martin' });
    const org = await newOrg();
    const response = await enrol(org, { email: 'claire.martin@exemple.fr' });
    expect(response.statusCode).toBe(201);
    expect(response.json()).toEqual({
      member: {
        id: expect.any(String),
        user_id: userId,
        email: 'claire.martin@exemple.fr',
        nom: 'Claire Martin',
        statut: 'actif',
        licence_type: 'standard',
        programmes: [],
        inscrit_le: today(),
      },
      status: 'active',
    });
    const event = await fixture.db.selectFrom('events').select('data').where('org_id', '=', org.orgId).executeTakeFirstOrThrow();
    expect(event.data).toMatchObject({ learner: { user_id: userId, name: 'Claire Martin' }, status: 'active' });
  });

  it('counts an account that has logged in as existing, and a pending invitation elsewhere as not', async () => {
    const loggedIn = await fixture.db
      .insertInto('accounts')
      .values({ email: 'lea.dubois@exemple.fr', name: 'Léa Dubois', first_login_at: new Date('2025-05-01T10:00:00Z') })
      .returning('id')
      .executeTakeFirstOrThrow();
    const elsewhere = await newOrg();
    const invitedElsewhere = await enrol(elsewhere, { email: 'karim.haddad@exemple.fr' });
    expect(invitedElsewhere.json().status).toBe('pending');

    const org = await newOrg();
    const active = (await enrol(org, { email: 'lea.dubois@exemple.fr' })).json();
    expect(active).toMatchObject({ status: 'active', member: { user_id: loggedIn.id, statut: 'actif' } });
    const pending = (await enrol(org, { email: 'karim.haddad@exemple.fr' })).json();
    expect(pending).toMatchObject({ status: 'pending', member: { user_id: invitedElsewhere.json().member.user_id, statut: 'invité' } });
  });

  it('trims and lower-cases the email: the stored form is canonical and a second spelling is already a member', async () => {
    const org = await newOrg();
    const first = await enrol(org, { email: '  Hugo.Bernard@Exemple.FR \t' });
    expect(first.statusCode).toBe(201);
    expect(first.json().member.email).toBe('hugo.bernard@exemple.fr');
    const account = await fixture.db
      .selectFrom('accounts')
      .select('email')
      .where('id', '=', first.json().member.user_id)
      .executeTakeFirstOrThrow();
    expect(account.email).toBe('hugo.bernard@exemple.fr');
    const member = await expectRefused(
      org,
      { email: 'hugo.bernard@exemple.fr' },
      409,
      /^Cet apprenant est déjà membre de votre organisation\.$/,
    );
    expect(member).toMatchObject({ code: 'already_member', param: 'email' });
    await expectRefused(org, { email: ' HUGO.BERNARD@EXEMPLE.FR' }, 409, /déjà membre/);
  });

  it('gives a standard licence first, then a tutorat one, then 409 with nothing written', async () => {
    const org = await newOrg({ standard: 1, tutorat: 1 });
    expect((await enrol(org, { email: 'a@exemple.fr' })).json().member.licence_type).toBe('standard');
    expect((await enrol(org, { email: 'b@exemple.fr' })).json().member.licence_type).toBe('tutorat');
    expect(await expectRefused(org, { email: 'c@exemple.fr' }, 409, /^Aucune licence disponible dans votre organisation\.$/)).toMatchObject(
      {
        code: 'licence_unavailable',
      },
    );
    expect(await fixture.db.selectFrom('accounts').select('id').where('email', '=', 'c@exemple.fr').execute()).toEqual([]);
  });

  it('never reuses a revoked licence', async () => {
    const org = await newOrg({});
    await addLearner(fixture.db, org.orgId, { email: 'ancien@exemple.fr', licence: { type: 'standard', status: 'révoquée' } });
    await expectRefused(org, { email: 'nouveau@exemple.fr' }, 409, /Aucune licence/);
  });

  it('enrols in the requested programmes (each once) and names them in member and event', async () => {
    const org = await newOrg();
    const excel = await addProgramme(org.orgId, 'excel-intermediaire');
    const management = await addProgramme(org.orgId, 'management-equipe');
    const response = await enrol(org, {
      email: 'lina@exemple.fr',
      programme_slugs: ['excel-intermediaire', 'management-equipe', 'excel-intermediaire'],
    });
    expect(response.statusCode).toBe(201);
    const { member } = response.json();
    expect(member.programmes).toEqual(['excel-intermediaire', 'management-equipe']);
    const enrolments = await fixture.db
      .selectFrom('programme_enrolments')
      .select(['programme_id', 'org_id'])
      .where('membership_id', '=', member.id)
      .orderBy('programme_id')
      .execute();
    expect(enrolments.map((e) => e.programme_id).sort()).toEqual([excel.id, management.id].sort());
    const event = await fixture.db.selectFrom('events').select('data').where('org_id', '=', org.orgId).executeTakeFirstOrThrow();
    expect(event.data).toMatchObject({ programmes: ['excel-intermediaire', 'management-equipe'] });
  });

  it('refuses an unknown programme slug with 400, another organisation’s included, and writes nothing', async () => {
    const org = await newOrg();
    await addProgramme(org.orgId, 'excel-intermediaire');
    const other = await newOrg();
    await addProgramme(other.orgId, 'secret-programme');
    const unknown = await expectRefused(
      org,
      { email: 'x@exemple.fr', programme_slugs: ['excel-intermediaire', 'excel-avance'] },
      400,
      /Programme inconnu.*« excel-avance »/,
    );
    expect(unknown).toMatchObject({ code: 'unknown_programme', param: 'programme_slugs' });
    await expectRefused(
      org,
      { email: 'x@exemple.fr', programme_slugs: ['secret-programme'] },
      400,
      /Programme inconnu.*« secret-programme »/,
    );
  });

  it('refuses a missing or malformed email with a French 400 and writes nothing', async () => {
    const org = await newOrg();
    await expectRefused(org, {}, 400, /le champ « email » est obligatoire/);
    await expectRefused(org, { programme_slugs: [] }, 400, /« email » est obligatoire/);
    await expectRefused(org, { email: 42 }, 400, /« email » doit être une chaîne de caractères/);
    for (const email of [
      '',
      '   ',
      'hugo',
      'hugo@',
      '@exemple.fr',
      'hugo bernard@exemple.fr',
      'hugo@exemple',
      `${'a'.repeat(250)}@exemple.fr`,
    ]) {
      await expectRefused(org, { email }, 400, /n’est pas une adresse électronique valide/);
    }
    await expectRefused(org, { email: 'a@exemple.fr', role: 'admin' }, 400, /« role » n’est pas reconnu/);
    await expectRefused(org, { email: 'a@exemple.fr', programme_slugs: 'excel' }, 400, /« programme_slugs » doit être un tableau/);
  });

  it('accepts only the organisation’s email domains, exactly and in any case, not their subdomains', async () => {
    const org = await newOrg({ standard: 5 }, ['dupont.fr', 'Formations-Dupont.com']);
    expect((await enrol(org, { email: 'Anne@DUPONT.fr' })).statusCode).toBe(201);
    expect((await enrol(org, { email: 'bruno@formations-dupont.com' })).statusCode).toBe(201);
    await expectRefused(
      org,
      { email: 'carla@gmail.com' },
      400,
      /« carla@gmail\.com » n’appartient pas à un domaine autorisé.*dupont\.fr, formations-dupont\.com/,
    );
    await expectRefused(org, { email: 'denis@paris.dupont.fr' }, 400, /n’appartient pas à un domaine autorisé/);
    await expectRefused(org, { email: 'eve@notdupont.fr' }, 400, /n’appartient pas à un domaine autorisé/);
  });

  it('refuses a read-only key with 403 and writes nothing', async () => {
    const org = await newOrg();
    await expectRefused(org, { email: 'lecture@exemple.fr' }, 403, /lecture seule/, org.readKey);
  });

  it('shows every enrolment at once in GET /users and GET /summary, and the two agree', async () => {
    const org = await newOrg({ standard: 2, tutorat: 2 });
    await addLearner(fixture.db, (await newOrg()).orgId, { email: 'existant@exemple.fr', name: 'Existant' });
    for (const email of ['p1@exemple.fr', 'existant@exemple.fr', 'p2@exemple.fr'])
      expect((await enrol(org, { email })).statusCode).toBe(201);
    const users = await get(org, '/v1/users');
    expect(users.data).toEqual([
      {
        nom: 'Existant',
        email: 'existant@exemple.fr',
        statut: 'actif',
        licence_type: 'standard',
        licence_statut: 'attribuée',
        inscrit_le: today(),
      },
      { nom: null, email: 'p1@exemple.fr', statut: 'invité', licence_type: 'standard', licence_statut: 'attribuée', inscrit_le: today() },
      { nom: null, email: 'p2@exemple.fr', statut: 'invité', licence_type: 'tutorat', licence_statut: 'attribuée', inscrit_le: today() },
    ]);
    const summary = (await get(org, '/v1/summary')).data;
    expect(summary).toEqual({
      utilisateurs: { total: 3, actifs: 1 },
      licences: { standard: { total: 2, disponibles: 0, utilisees: 2 }, tutorat: { total: 2, disponibles: 1, utilisees: 1 } },
    });
    expect(summary.utilisateurs.total).toBe(users.pagination.total);
    expect(summary.utilisateurs.actifs).toBe(users.data.filter((u: { statut: string }) => u.statut === 'actif').length);
  });
});
