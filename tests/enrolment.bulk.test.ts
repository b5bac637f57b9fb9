import { describe, expect, it } from 'vitest';
import { loadOpenapiDocument } from '../src/openapi-document';
import { enrolmentHarness, learnerEmails, licenceInvariants, writtenState } from './enrolment.helpers';
import { addLearner } from './support/factories';
import { useTestApp } from './support/lifecycle';

const fixture = useTestApp();

const { newOrg, enrol, expectRefused } = enrolmentHarness(fixture);

const rows = (emails: string[]) => emails.map((email) => ({ email }));

describe('POST /users, a best-effort batch', () => {
  it('answers 200 with one result per row, in request order, each row succeeding or failing on its own', async () => {
    const org = await newOrg({ standard: 2, tutorat: 1 }, ['exemple.fr']);
    await addLearner(fixture.db, org.orgId, { email: 'deja@exemple.fr', licence: { type: 'standard', status: 'activée' } });
    await addLearner(fixture.db, (await newOrg({})).orgId, { email: 'compte@exemple.fr', name: 'Compte Existant' });
    const response = await enrol(org, {
      users: [
        { email: ' Premier@Exemple.fr ' },
        { email: 'pas-une-adresse' },
        { email: 'deja@exemple.fr' },
        { email: 'hors@gmail.com' },
        { email: 'compte@exemple.fr' },
        { email: 'premier@exemple.fr' },
        { email: 'troisieme@exemple.fr' },
        { email: 'sans-licence@exemple.fr' },
      ],
    });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.summary).toEqual({ requested: 8, enrolled: 3, failed: 5 });
    expect(body.results).toEqual([
      { email: 'premier@exemple.fr', status: 'pending', member_id: expect.any(String) },
      { email: 'pas-une-adresse', member_id: null, error: '« pas-une-adresse » n’est pas une adresse électronique valide.' },
      { email: 'deja@exemple.fr', member_id: null, error: 'Cet apprenant est déjà membre de votre organisation.' },
      {
        email: 'hors@gmail.com',
        member_id: null,
        error: expect.stringMatching(/^L’adresse « hors@gmail\.com » n’appartient pas à un domaine autorisé/),
      },
      { email: 'compte@exemple.fr', status: 'active', member_id: expect.any(String) },
      { email: 'premier@exemple.fr', member_id: null, error: expect.stringMatching(/^Adresse déjà présente plus haut dans ce lot/) },
      { email: 'troisieme@exemple.fr', status: 'pending', member_id: expect.any(String) },
      { email: 'sans-licence@exemple.fr', member_id: null, error: 'Aucune licence disponible dans votre organisation.' },
    ]);
    // The document quotes the refusal of a row already higher in the batch as the server words it.
    const description = loadOpenapiDocument().paths['/users'].post.description.replace(/\s+/g, ' ');
    expect(description).toContain(`« ${body.results[5].error} »`);
    expect(Object.keys(body.results[0])).toEqual(['email', 'status', 'member_id']);
    expect(Object.keys(body.results[1])).toEqual(['email', 'member_id', 'error']);
    // Licences go to the rows in request order: standard, standard, then tutorat.
    const licences = await fixture.db
      .selectFrom('licences')
      .select(['type', 'membership_id'])
      .where('org_id', '=', org.orgId)
      .where('status', '=', 'attribuée')
      .execute();
    const typeOf = (memberId: string) => licences.find((l) => l.membership_id === memberId)?.type;
    expect([body.results[0], body.results[4], body.results[6]].map((r: { member_id: string }) => typeOf(r.member_id))).toEqual([
      'standard',
      'standard',
      'tutorat',
    ]);
    // The row without a licence left nothing behind, not even its account.
    expect(await fixture.db.selectFrom('accounts').select('id').where('email', '=', 'sans-licence@exemple.fr').execute()).toEqual([]);
    expect(await licenceInvariants(fixture.db, org.orgId, ['sans-licence@exemple.fr'])).toMatchObject({
      members_without_one_licence: 0,
      stray_licences: 0,
      members: 4,
      enrolled_events: 3,
      orphan_accounts: 0,
    });
  });

  it('is safe to re-run: enrolled learners fail as already members and no licence is used', async () => {
    const org = await newOrg({ standard: 10 });
    const batch = { users: rows(learnerEmails('relance', 4)) };
    expect((await enrol(org, batch)).json().summary).toEqual({ requested: 4, enrolled: 4, failed: 0 });
    const before = await writtenState(fixture.db, org.orgId);
    const again = (await enrol(org, batch)).json();
    expect(again.summary).toEqual({ requested: 4, enrolled: 0, failed: 4 });
    expect(again.results.every((r: { error: string; member_id: null }) => r.member_id === null && /déjà membre/.test(r.error))).toBe(true);
    expect(await writtenState(fixture.db, org.orgId)).toEqual(before);
  });

  it('enrols each row in its programmes and records one learner.enrolled per enrolled row', async () => {
    const org = await newOrg({ standard: 5 });
    await fixture.db
      .insertInto('programmes')
      .values([
        { org_id: org.orgId, slug: 'excel-intermediaire', title: 'Excel' },
        { org_id: org.orgId, slug: 'management-equipe', title: 'Management' },
      ])
      .execute();
    const body = (
      await enrol(org, {
        users: [
          { email: 'lea@exemple.fr', programme_slugs: ['excel-intermediaire', 'management-equipe'] },
          { email: 'karim@exemple.fr' },
          { email: 'hugo@exemple.fr', programme_slugs: ['management-equipe'] },
        ],
      })
    ).json();
    expect(body.summary.enrolled).toBe(3);
    const enrolments = await fixture.db
      .selectFrom('programme_enrolments as e')
      .innerJoin('memberships as m', 'm.id', 'e.membership_id')
      .innerJoin('accounts as a', 'a.id', 'm.account_id')
      .innerJoin('programmes as p', 'p.id', 'e.programme_id')
      .select(['a.email', 'p.slug'])
      .where('e.org_id', '=', org.orgId)
      .orderBy('a.email')
      .orderBy('p.slug')
      .execute();
    expect(enrolments).toEqual([
      { email: 'hugo@exemple.fr', slug: 'management-equipe' },
      { email: 'lea@exemple.fr', slug: 'excel-intermediaire' },
      { email: 'lea@exemple.fr', slug: 'management-equipe' },
    ]);
    const events = await fixture.db
      .selectFrom('events')
      .select('data')
      .where('org_id', '=', org.orgId)
      .where('type', '=', 'learner.enrolled')
      .orderBy('created_at')
      .execute();
    expect(events.map((e) => e.data)).toEqual([
      {
        learner: { user_id: expect.any(String), email: 'lea@exemple.fr', name: null },
        status: 'pending',
        programmes: ['excel-intermediaire', 'management-equipe'],
      },
      { learner: { user_id: expect.any(String), email: 'karim@exemple.fr', name: null }, status: 'pending', programmes: [] },
      {
        learner: { user_id: expect.any(String), email: 'hugo@exemple.fr', name: null },
        status: 'pending',
        programmes: ['management-equipe'],
      },
    ]);
  });

  it('refuses the whole batch with 400, writing nothing, for its shape: empty, over 50, a row without email, an unknown slug', async () => {
    const org = await newOrg({ standard: 60 });
    await expectRefused(org, { users: [] }, 400, /« users » doit contenir au moins 1 élément/);
    await expectRefused(org, { users: rows(learnerEmails('trop', 51)) }, 400, /« users » doit contenir au plus 50 éléments/);
    const missing = await expectRefused(
      org,
      { users: [{ email: 'a@exemple.fr' }, { programme_slugs: [] }] },
      400,
      /« users\[1\]\.email » est obligatoire/,
    );
    expect(missing).toMatchObject({ code: 'invalid_body', param: 'users[1].email' });
    await expectRefused(
      org,
      { users: [{ email: 'a@exemple.fr' }, { email: 'b@exemple.fr', nom: 'B' }] },
      400,
      /« users\[1\]\.nom » n’est pas reconnu/,
    );
    await expectRefused(
      org,
      { users: [{ email: 'a@exemple.fr' }, { email: 'b@exemple.fr', programme_slugs: ['inconnu'] }] },
      400,
      /Programme inconnu.*« inconnu » \(users\[1\]\.programme_slugs\)/,
    );
    await expectRefused(org, { users: [{ email: 'a@exemple.fr' }], atomic: 'oui' }, 400, /« atomic » doit être un booléen/);
    await expectRefused(org, { users: [{ email: 'a@exemple.fr' }], email: 'b@exemple.fr' }, 400, /n’est pas reconnu/);
    expect((await enrol(org, { users: rows(learnerEmails('juste', 50)) })).json().summary).toEqual({
      requested: 50,
      enrolled: 50,
      failed: 0,
    });
  });

  it('refuses a read-only key with 403', async () => {
    const org = await newOrg({ standard: 1 });
    const response = await enrol(org, { users: rows(['a@exemple.fr']) }, org.readKey);
    expect(response.statusCode).toBe(403);
  });
});

describe('POST /users, an atomic batch', () => {
  it('enrols every row in one transaction; rows already members fail without blocking and use no licence', async () => {
    const org = await newOrg({ standard: 1, tutorat: 1 });
    await addLearner(fixture.db, org.orgId, { email: 'deja@exemple.fr', licence: { type: 'standard', status: 'activée' } });
    const response = await enrol(org, { users: rows(['a@exemple.fr', 'deja@exemple.fr', 'b@exemple.fr', 'A@exemple.fr']), atomic: true });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      summary: { requested: 4, enrolled: 2, failed: 2 },
      results: [
        { email: 'a@exemple.fr', status: 'pending', member_id: expect.any(String) },
        { email: 'deja@exemple.fr', member_id: null, error: 'Cet apprenant est déjà membre de votre organisation.' },
        { email: 'b@exemple.fr', status: 'pending', member_id: expect.any(String) },
        { email: 'a@exemple.fr', member_id: null, error: expect.stringMatching(/déjà présente plus haut/) },
      ],
    });
  });

  it('counts the licences first: too few gives 409 and nobody is enrolled', async () => {
    const org = await newOrg({ standard: 1, tutorat: 1 });
    const emails = learnerEmails('court', 3);
    await expectRefused(
      org,
      { users: rows(emails), atomic: true },
      409,
      /^Licences disponibles insuffisantes pour ce lot atomique : 3 nécessaire\(s\), 2 disponible\(s\)\. Personne n’a été inscrit\.$/,
    );
    expect(await fixture.db.selectFrom('accounts').select('id').where('email', 'in', emails).execute()).toEqual([]);
  });

  it('refuses the whole batch with 400 when any row has a bad email or domain, naming the rows', async () => {
    const org = await newOrg({ standard: 5 }, ['exemple.fr']);
    const refusal = await expectRefused(
      org,
      { users: rows(['a@exemple.fr', 'mauvaise', 'c@gmail.com']), atomic: true },
      400,
      /^Lot atomique refusé, personne n’a été inscrit\. users\[1\] : « mauvaise » n’est pas une adresse électronique valide\. ; users\[2\] : L’adresse « c@gmail\.com » n’appartient pas/,
    );
    // The code and the field of the first row at fault.
    expect(refusal).toMatchObject({ code: 'invalid_email', param: 'users[1].email' });
  });

  it('with atomic false behaves as best effort', async () => {
    const org = await newOrg({ standard: 1 });
    const body = (await enrol(org, { users: rows(['a@exemple.fr', 'b@exemple.fr']), atomic: false })).json();
    expect(body.summary).toEqual({ requested: 2, enrolled: 1, failed: 1 });
  });
});
