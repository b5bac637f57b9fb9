import { beforeAll, describe, expect, it } from 'vitest';
import { anErrorBody, bearer, buildTestApp } from './support/app';
import { addLearner, addLicences, createOrgWithKeys } from './support/factories';
import { useTestApp } from './support/lifecycle';

const fixture = useTestApp();
let org: Awaited<ReturnType<typeof createOrgWithKeys>>;
let other: Awaited<ReturnType<typeof createOrgWithKeys>>;
let zoeId: string;

beforeAll(async () => {
  org = await createOrgWithKeys(fixture.db, { name: 'Formations Dupont' });
  other = await createOrgWithKeys(fixture.db, { name: 'Autre organisme' });
  const db = fixture.db;
  await addLicences(db, org.orgId, 'standard', 3);
  await addLicences(db, org.orgId, 'tutorat', 2);
  await addLearner(db, org.orgId, {
    email: 'bea@exemple.fr',
    name: 'Béatrice "Béa" Durand, fille',
    at: '2026-02-10 09:00',
    licence: { type: 'standard', status: 'activée' },
  });
  await addLearner(db, org.orgId, {
    email: 'alain@exemple.fr',
    name: 'Alain Petit',
    at: '2026-02-10 09:00',
    licence: { type: 'tutorat', status: 'attribuée' },
  });
  await addLearner(db, org.orgId, {
    email: 'chloe@exemple.fr',
    name: null,
    status: 'invité',
    at: '2026-01-05 23:30',
    licence: { type: 'standard', status: 'attribuée' },
  });
  await addLearner(db, org.orgId, {
    email: 'david@exemple.fr',
    name: 'David Roux',
    status: 'suspendu',
    at: '2025-12-31 23:30',
    licence: { type: 'standard', status: 'révoquée' },
  });
  zoeId = (await addLearner(db, org.orgId, { email: 'zoe@exemple.fr', name: '=SOMME(A1)', at: '2026-06-01 12:00', licence: null })).userId;
  // The other organisation has a learner too, with an address of its own and one shared.
  await addLearner(db, other.orgId, { email: 'secret@autre.fr', name: 'Secret', at: '2026-01-01 10:00' });
  await addLearner(db, other.orgId, { email: 'alain@exemple.fr', name: 'Alain Petit', at: '2026-01-01 10:00' });
});

const get = (url: string, key = org.readKey) => fixture.app.inject({ method: 'GET', url, headers: bearer(key) });

describe('GET /users', () => {
  it('lists the learners in the order of their enrolment date (Paris), then email', async () => {
    const response = await get('/v1/users');
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.resource).toBe('users');
    expect(body.meta).toMatchObject({ org_name: 'Formations Dupont', truncated: false, updated_since: null, programme: null });
    expect(body.meta.generated_at).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$/);
    expect(body.meta).not.toHaveProperty('learner');
    expect(body.pagination).toEqual({ limit: 100, offset: 0, count: 5, total: 5, has_more: false });
    expect(body.data).toEqual([
      {
        nom: 'David Roux',
        email: 'david@exemple.fr',
        statut: 'suspendu',
        licence_type: 'standard',
        licence_statut: 'révoquée',
        inscrit_le: '2025-12-31',
      },
      {
        nom: null,
        email: 'chloe@exemple.fr',
        statut: 'invité',
        licence_type: 'standard',
        licence_statut: 'attribuée',
        inscrit_le: '2026-01-05',
      },
      {
        nom: 'Alain Petit',
        email: 'alain@exemple.fr',
        statut: 'actif',
        licence_type: 'tutorat',
        licence_statut: 'attribuée',
        inscrit_le: '2026-02-10',
      },
      {
        nom: 'Béatrice "Béa" Durand, fille',
        email: 'bea@exemple.fr',
        statut: 'actif',
        licence_type: 'standard',
        licence_statut: 'activée',
        inscrit_le: '2026-02-10',
      },
      { nom: '=SOMME(A1)', email: 'zoe@exemple.fr', statut: 'actif', licence_type: null, licence_statut: null, inscrit_le: '2026-06-01' },
    ]);
    expect(Object.keys(body.data[0])).toEqual(['nom', 'email', 'statut', 'licence_type', 'licence_statut', 'inscrit_le']);
  });

  it('pages without losing or repeating a row', async () => {
    const seen: string[] = [];
    for (let offset = 0; offset < 6; offset += 2) {
      const body = (await get(`/v1/users?limit=2&offset=${offset}`)).json();
      expect(body.pagination).toEqual({ limit: 2, offset, count: Math.min(2, 5 - offset), total: 5, has_more: offset + 2 < 5 });
      seen.push(...body.data.map((row: { email: string }) => row.email));
    }
    expect(seen).toEqual(['david@exemple.fr', 'chloe@exemple.fr', 'alain@exemple.fr', 'bea@exemple.fr', 'zoe@exemple.fr']);
    const middle = await get('/v1/users?limit=2&offset=2&updated_since=2025-01-01');
    expect(middle.headers.link).toBe('</v1/users?limit=2&offset=4&updated_since=2025-01-01>; rel="next"');
    const last = await get('/v1/users?limit=2&offset=4');
    expect(last.headers.link).toBeUndefined();
    const past = (await get('/v1/users?offset=50')).json();
    expect(past.pagination).toEqual({ limit: 100, offset: 50, count: 0, total: 5, has_more: false });
  });

  it('keeps rows on or after updated_since, ignores year, and echoes the filter', async () => {
    const body = (await get('/v1/users?updated_since=2026-02-10&year=2019')).json();
    expect(body.data.map((r: { email: string }) => r.email)).toEqual(['alain@exemple.fr', 'bea@exemple.fr', 'zoe@exemple.fr']);
    expect(body.meta.updated_since).toBe('2026-02-10');
    expect(body.meta.year).toBe(2019);
  });

  it('restricts to one learner by email (any case) or user_id, with meta.learner', async () => {
    const byEmail = (await get('/v1/users?email=ZOE@Exemple.fr')).json();
    expect(byEmail.data).toHaveLength(1);
    expect(byEmail.meta.learner).toEqual({ user_id: zoeId, email: 'zoe@exemple.fr' });
    const byId = (await get(`/v1/users?user_id=${zoeId}`)).json();
    expect(byId.data).toEqual(byEmail.data);
  });

  it('answers 404 for a learner who is not in the organisation, even one of another organisation', async () => {
    for (const query of ['email=inconnu@exemple.fr', 'email=secret@autre.fr', 'user_id=00000000-0000-4000-8000-000000000000']) {
      const response = await get(`/v1/users?${query}`);
      expect(response.statusCode, query).toBe(404);
      expect(response.json(), query).toEqual(anErrorBody(expect.any(String), 'unknown_learner', { param: query.split('=')[0] }));
    }
  });

  it('never shows another organisation’s learners', async () => {
    const body = (await get('/v1/users', other.readKey)).json();
    expect(body.data.map((r: { email: string }) => r.email)).toEqual(['alain@exemple.fr', 'secret@autre.fr']);
    expect(body.meta.org_name).toBe('Autre organisme');
  });

  it('caps organisation-wide requests and says so in meta.truncated, but never one learner', async () => {
    const capped = await buildTestApp(fixture.db, { aggregationCap: 3 });
    try {
      const page = (await capped.inject({ url: '/v1/users?limit=2&offset=2', headers: bearer(org.readKey) })).json();
      expect(page.meta.truncated).toBe(true);
      expect(page.pagination).toEqual({ limit: 2, offset: 2, count: 1, total: 3, has_more: false });
      const csv = (await capped.inject({ url: '/v1/users?format=csv', headers: bearer(org.readKey) })).body;
      expect(csv.trim().split('\r\n')).toHaveLength(1 + 3);
      const one = (await capped.inject({ url: '/v1/users?email=zoe@exemple.fr', headers: bearer(org.readKey) })).json();
      expect(one.meta.truncated).toBe(false);
      const exact = (await capped.inject({ url: '/v1/users?updated_since=2026-02-10', headers: bearer(org.readKey) })).json();
      expect(exact.meta.truncated).toBe(false);
      expect(exact.pagination.total).toBe(3);
    } finally {
      await capped.close();
    }
  });

  it('exports CSV: BOM, header row in JSON order, quoting, empty cells for null, formula guard', async () => {
    const response = await get('/v1/users?format=csv');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(response.headers['content-disposition']).toBe('attachment; filename="users.csv"');
    expect(response.headers['x-ratelimit-limit']).toBe('120');
    const bytes = response.rawPayload;
    expect([...bytes.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    expect(bytes.subarray(3).toString('utf8')).toBe(
      [
        'nom,email,statut,licence_type,licence_statut,inscrit_le',
        'David Roux,david@exemple.fr,suspendu,standard,révoquée,2025-12-31',
        ',chloe@exemple.fr,invité,standard,attribuée,2026-01-05',
        'Alain Petit,alain@exemple.fr,actif,tutorat,attribuée,2026-02-10',
        '"Béatrice ""Béa"" Durand, fille",bea@exemple.fr,actif,standard,activée,2026-02-10',
        `"'=SOMME(A1)",zoe@exemple.fr,actif,,,2026-06-01`,
        '',
      ].join('\r\n'),
    );
  });
});

describe('GET /summary', () => {
  it('counts learners and licences exactly as users shows them', async () => {
    const response = await get('/v1/summary');
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body).not.toHaveProperty('pagination');
    expect(body.resource).toBe('summary');
    // 5 learners, 3 actifs; standard: 3 spare + 3 held (1 revoked, which frees nothing); tutorat: 2 spare + 1 held.
    expect(body.data).toEqual({
      utilisateurs: { total: 5, actifs: 3 },
      licences: { standard: { total: 6, disponibles: 3, utilisees: 3 }, tutorat: { total: 3, disponibles: 2, utilisees: 1 } },
    });
    const users = (await get('/v1/users')).json().data as { statut: string }[];
    expect(body.data.utilisateurs.total).toBe(users.length);
    expect(body.data.utilisateurs.actifs).toBe(users.filter((u) => u.statut === 'actif').length);
  });

  it('summarises one learner, and exports one CSV row with dotted keys', async () => {
    const one = (await get('/v1/summary?email=bea@exemple.fr')).json();
    expect(one.data.utilisateurs).toEqual({ total: 1, actifs: 1 });
    expect(one.data.licences.standard).toEqual({ total: 1, disponibles: 0, utilisees: 1 });
    const csv = (await get('/v1/summary?format=csv')).rawPayload.subarray(3).toString('utf8');
    expect(csv).toBe(
      'utilisateurs.total,utilisateurs.actifs,licences.standard.total,licences.standard.disponibles,' +
        'licences.standard.utilisees,licences.tutorat.total,licences.tutorat.disponibles,licences.tutorat.utilisees\r\n5,3,6,3,3,3,2,1\r\n',
    );
  });
});
