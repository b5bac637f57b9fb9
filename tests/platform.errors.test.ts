import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadOpenapiDocument } from '../src/openapi-document';
import { anErrorBody, bearer } from './support/app';
import { addLearner, createOrgWithKeys } from './support/factories';
import { useTestApp } from './support/lifecycle';
import { listResources, offeredResourceNames, resourceNames } from './support/list-resources';

const fixture = useTestApp();
let key: string;

beforeAll(async () => {
  const org = await createOrgWithKeys(fixture.db);
  key = org.readKey;
  await addLearner(fixture.db, org.orgId, { email: 'camille.martin@exemple.fr' });
});

const get = (url: string) => fixture.app.inject({ method: 'GET', url, headers: bearer(key) });

describe('an unknown programme slug', () => {
  it('is a 400 where a programme applies, and ignored where none does, as the document says per operation', async () => {
    const withoutProgramme = [
      ...listResources.filter((resource) => !resource.filtersByProgramme).map((resource) => resource.name),
      'summary',
    ];
    expect([...withoutProgramme].sort()).toEqual(['learners', 'logins', 'summary', 'users']);
    for (const name of resourceNames) {
      const response = await get(`/v1/${name}?programme=nexiste-pas`);
      if (withoutProgramme.includes(name)) expect(response.statusCode, name).toBe(200);
      else
        expect(response.json(), name).toEqual(
          anErrorBody(expect.stringContaining('« nexiste-pas »'), 'unknown_programme', { param: 'programme' }),
        );
    }
    // The report of a learner the organisation has, limited to a programme it has not.
    const report = await get('/v1/activity-report?email=camille.martin@exemple.fr&programme=nexiste-pas');
    expect(report.json()).toEqual(anErrorBody(expect.stringContaining('« nexiste-pas »'), 'unknown_programme', { param: 'programme' }));
    expect(loadOpenapiDocument().components.parameters.programme.description.replace(/\s+/g, ' ')).toContain(
      'Ignoré, connu ou non, par les ressources sans programme : `learners`, `logins`, `users` et `summary`',
    );
  });
});

describe('error bodies', () => {
  it('answers an unknown resource with 404 and the list of resources the contract gives', async () => {
    const response = await get('/v1/cours');
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual(
      anErrorBody(expect.stringContaining('cours'), 'unknown_resource', {
        available: offeredResourceNames(loadOpenapiDocument()),
      }),
    );
  });

  it.each([
    ['DELETE', '/v1/users', 'GET, POST'],
    ['PUT', '/v1/learners', 'GET'],
    ['POST', '/v1/summary', 'GET'],
    ['PATCH', '/v1/activity-report', 'GET'],
    ['POST', '/v1/whatever', 'GET'],
    ['HEAD', '/v1/activity-report', 'GET'],
    ['OPTIONS', '/v1/users', 'GET, POST'],
    ['TRACE', '/v1/users', 'GET, POST'],
    ['PROPFIND', '/v1/logins', 'GET'],
  ])('answers %s %s with 405 and Allow', async (method, url, allow) => {
    const response = await fixture.app.inject({ method: method as 'POST', url, headers: bearer(key) });
    expect(response.statusCode).toBe(405);
    expect(response.headers.allow).toBe(allow);
    if (method !== 'HEAD')
      expect(response.json()).toEqual(anErrorBody(expect.stringMatching(new RegExp(`^Méthode ${method} non autorisée`))));
  });

  it.each([
    ['QUERY', '/v1/users', {}, undefined, 405],
    ['PUT', '/v1/users', { 'content-type': 'application/json' }, '{pas du json', 405],
    ['DELETE', '/v1/learners', { 'content-type': 'application/json' }, JSON.stringify({ a: 'x'.repeat(2 * 1024 * 1024) }), 405],
    ['PATCH', '/v1/summary', { 'content-type': 'text/plain' }, 'bonjour', 405],
    ['POST', '/v1/summary', { 'content-type': 'application/json' }, '', 405],
    ['POST', '/v1/inconnu/chemin', { 'content-type': 'application/json' }, '{pas du json', 404],
  ])('answers %s %s with a body it cannot read as 404 or 405, never 400, 413 or 415', async (method, url, headers, payload, status) => {
    const response = await fixture.app.inject({ method: method as 'POST', url, headers: { ...bearer(key), ...headers }, payload });
    expect(response.statusCode).toBe(status);
    expect(response.json()).toEqual(anErrorBody(expect.stringMatching(status === 405 ? /^Méthode .* non autorisée/ : /^Adresse inconnue/)));
    // Without a key, the key comes first, whatever the body.
    const anonymous = await fixture.app.inject({ method: method as 'POST', url, headers, payload });
    expect(anonymous.statusCode).toBe(401);
  });

  it.each([
    ['limit=0', 'limit', /supérieur ou égal à 1/],
    ['limit=5000', 'limit', /inférieur ou égal à 1000/],
    ['offset=-1', 'offset', /supérieur ou égal à 0/],
    ['year=abc', 'year', /nombre entier/],
    ['email=pas-une-adresse', 'email', /adresse électronique/],
    ['user_id=123', 'user_id', /UUID/],
    ['format=xml', 'format', /json, csv/],
    ['updated_since=2026-13-45', 'updated_since', /AAAA-MM-JJ/],
  ])('answers %s with a 400 that names the parameter', async (query, name, detail) => {
    const response = await get(`/v1/users?${query}`);
    expect(response.statusCode).toBe(400);
    const { error } = response.json();
    expect(error).toContain(`« ${name} »`);
    expect(error).toMatch(detail);
    expect(response.json()).toEqual(anErrorBody(error, 'invalid_parameter', { param: name }));
  });

  it('answers an unknown address with a French 404', async () => {
    const response = await get('/v1/users/extra/segments');
    expect(response.statusCode).toBe(404);
    expect(response.json().error).toMatch(/Adresse inconnue/);
  });

  it('hides the detail of an internal error and gives a request id to quote', async () => {
    await sql`alter table memberships rename to memberships_hidden`.execute(fixture.db);
    try {
      const response = await get('/v1/users');
      expect(response.statusCode).toBe(500);
      expect(response.json()).toEqual(anErrorBody(expect.stringMatching(/^Erreur interne du serveur/)));
      expect(response.body).not.toMatch(/memberships|relation|select|stack/i);
      expect(response.headers['x-request-id']).toBeTruthy();
    } finally {
      await sql`alter table memberships_hidden rename to memberships`.execute(fixture.db);
    }
  });
});
