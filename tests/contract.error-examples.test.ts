import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeApiKey } from '../db/api-keys';
import { databaseUnavailableMessage } from '../src/http/error-handler';
import { ApiError } from '../src/http/errors';
import { loadManagementDocument, loadOpenapiDocument } from '../src/openapi-document';
import { addLearner, addLicences, createKey, createOrgWithKeys } from './support/factories';
import { useTestApp } from './support/lifecycle';

/*
 * The error examples of openapi.yaml and management.yaml are what the server answers: Prism serves
 * them to integrators as the server's own bodies. Each example has a request here that the real
 * server answers with that very body (its `doc_url` on this server); those that need a failure
 * (500, 503, 408) are the texts the server's code sends.
 */

interface Scenario {
  method?: 'GET' | 'POST' | 'DELETE';
  /** `{org}` stands for the organisation made for these tests. */
  path: string;
  key?:
    | 'read'
    | 'write'
    | 'none'
    | 'revoked'
    | 'expired'
    | 'unknown'
    | 'noLicence'
    | 'fewLicences'
    | 'spare'
    | 'management'
    | 'managementWrong';
  headers?: Record<string, string>;
  body?: string;
  /** Sent again until the key's budget is spent: the answer is the first 429. */
  untilRateLimited?: true;
  /** Refused before there is a request, so with no Host to link with: `doc_url` is relative. */
  relativeDocUrl?: true;
}

type ScenarioOrText = Scenario | { text: string };

const partnerScenarios: Record<string, ScenarioOrText> = {
  'BadRequest/limit': { path: '/v1/learners?limit=5000' },
  'BadRequest/programme': { path: '/v1/attendance?programme=excel-avance' },
  'BadRequest/domaine': { method: 'POST', path: '/v1/users', key: 'write', body: JSON.stringify({ email: 'hugo.bernard@gmail.com' }) },
  'BadRequest/lot-trop-grand': {
    method: 'POST',
    path: '/v1/users',
    key: 'write',
    body: JSON.stringify({ users: Array.from({ length: 73 }, (_, i) => ({ email: `apprenant${i}@formations-dupont.fr` })) }),
  },
  'BadRequest/rapport-sans-apprenant': { path: '/v1/activity-report' },
  'Unauthorized/absente': { path: '/v1/learners', key: 'none' },
  'Unauthorized/invalide': { path: '/v1/learners', key: 'unknown' },
  'Unauthorized/revoquee': { path: '/v1/learners', key: 'revoked' },
  'Unauthorized/expiree': { path: '/v1/learners', key: 'expired' },
  'Forbidden/lecture-seule': {
    method: 'POST',
    path: '/v1/users',
    key: 'read',
    body: JSON.stringify({ email: 'lea.martin@formations-dupont.fr' }),
  },
  'NotFound/apprenant-inconnu': { path: '/v1/users?email=inconnu%40formations-dupont.fr' },
  'UnknownResource/ressource-inconnue': { path: '/v1/apprenants' },
  'MethodNotAllowed/delete': { method: 'DELETE', path: '/v1/users' },
  'Conflict/deja-membre': {
    method: 'POST',
    path: '/v1/users',
    key: 'write',
    body: JSON.stringify({ email: 'camille.martin@formations-dupont.fr' }),
  },
  'Conflict/sans-licence': {
    method: 'POST',
    path: '/v1/users',
    key: 'noLicence',
    body: JSON.stringify({ email: 'lea.martin@formations-dupont.fr' }),
  },
  'Conflict/lot-atomique': {
    method: 'POST',
    path: '/v1/users',
    key: 'fewLicences',
    body: JSON.stringify({ atomic: true, users: Array.from({ length: 5 }, (_, i) => ({ email: `lot${i}@formations-dupont.fr` })) }),
  },
  'TooManyRequests/limite': { path: '/v1/summary', key: 'spare', untilRateLimited: true },
  'UriTooLong/adresse': { path: `/v1/learners?year=2026&x=${'a'.repeat(8200)}` },
  'HeadersTooLarge/en-tetes': { path: '/v1/learners', headers: { 'x-grand': 'a'.repeat(20_000) }, relativeDocUrl: true },
  'PayloadTooLarge/corps': { method: 'POST', path: '/v1/users', key: 'write', body: JSON.stringify({ email: 'x'.repeat(1_100_000) }) },
  'UnsupportedMediaType/texte': {
    method: 'POST',
    path: '/v1/users',
    key: 'write',
    headers: { 'content-type': 'text/plain' },
    body: 'bonjour',
  },
  'InternalError/interne': { text: new ApiError('internal').message },
  'ServiceUnavailable/base-injoignable': { text: databaseUnavailableMessage },
  'RequestTimeout/lente': { text: new ApiError('request_timeout').message },
};

const endpointBody = JSON.stringify({ url: 'https://93.184.216.34/webhooks', event_types: ['learner.enrolled'] });

const managementScenarios: Record<string, ScenarioOrText> = {
  'BadRequest/limite': { path: '/manage/v1/organisations/{org}/api-keys?limit=500', key: 'management' },
  'Unauthorized/session-fermee': { path: '/manage/v1/session', key: 'none', headers: { cookie: 'portail_session=fermee' } },
  'Forbidden/page-seulement': { path: '/manage/v1/session', key: 'management' },
  'NotFound/organisation': { path: '/manage/v1/organisations/00000000-0000-4000-8000-000000000000/api-keys', key: 'management' },
  'Conflict/limite-de-points': {
    method: 'POST',
    path: '/manage/v1/organisations/{org}/webhook-endpoints',
    key: 'management',
    body: endpointBody,
  },
  'TooManyRequests/limite': { path: '/manage/v1/organisations/{org}/api-keys', key: 'managementWrong', untilRateLimited: true },
  'InternalError/interne': { text: new ApiError('internal').message },
  'ServiceUnavailable/base-injoignable': { text: databaseUnavailableMessage },
};

const documents = [
  { name: 'openapi.yaml', prefix: '/v1', document: loadOpenapiDocument(), scenarios: partnerScenarios },
  { name: 'management.yaml', prefix: '/manage/v1', document: loadManagementDocument(), scenarios: managementScenarios },
];

/** Every example of every error response of a document, by `Response/example`. */
function errorExamples(document: Record<string, any>): Map<string, Record<string, unknown>> {
  const examples = new Map<string, Record<string, unknown>>();
  for (const [name, response] of Object.entries<Record<string, any>>(document.components.responses)) {
    const content = response.content?.['application/json'];
    if (!content) continue;
    for (const [exampleName, example] of Object.entries<{ value: Record<string, unknown> }>(content.examples ?? {}))
      examples.set(`${name}/${exampleName}`, example.value);
  }
  return examples;
}

const managementToken = 'jeton-de-gestion-de-la-plateforme-0123456789abcdef';
const fixture = useTestApp({ managementToken, webhookAllowInsecure: true });
const keys: Record<string, string> = {};
const ids = { org: '' };
let baseUrl = '';

beforeAll(async () => {
  const org = await createOrgWithKeys(fixture.db, { domains: ['formations-dupont.fr'] });
  await addLicences(fixture.db, org.orgId, 'standard', 5);
  await addLearner(fixture.db, org.orgId, { email: 'camille.martin@formations-dupont.fr' });
  const revoked = await createKey(fixture.db, org.orgId, ['read']);
  await revokeApiKey(fixture.db, revoked.id);
  const withoutLicence = await createOrgWithKeys(fixture.db, { name: 'Formations Sans Licence' });
  const fewLicences = await createOrgWithKeys(fixture.db, { name: 'Formations Trois Licences' });
  await addLicences(fixture.db, fewLicences.orgId, 'standard', 3);
  Object.assign(keys, {
    read: org.readKey,
    write: org.writeKey,
    revoked: revoked.key,
    expired: (await createKey(fixture.db, org.orgId, ['read'], '2024-01-31')).key,
    unknown: 'sk_live_0000000000000000000000000000000000000000',
    noLicence: withoutLicence.writeKey,
    fewLicences: fewLicences.writeKey,
    spare: (await createKey(fixture.db, org.orgId, ['read'])).key,
    management: managementToken,
    managementWrong: 'pas-le-jeton-de-gestion',
  });
  await fixture.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(fixture.app.server.address() as { port: number }).port}`;
  // The organisation holds as many webhook endpoints as it may: one more is refused.
  ids.org = org.orgId;
  for (let created = 0; created < 20; created++) {
    const endpoint = await fetch(`${baseUrl}/manage/v1/organisations/${org.orgId}/webhook-endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${managementToken}`, 'content-type': 'application/json' },
      body: endpointBody,
    });
    expect(endpoint.status).toBe(201);
  }
});

afterAll(() => fixture.app.close());

async function answer(scenario: Scenario): Promise<Record<string, unknown>> {
  const key = scenario.key ?? 'read';
  const send = () =>
    fetch(baseUrl + scenario.path.replace('{org}', ids.org), {
      method: scenario.method ?? 'GET',
      headers: {
        ...(key === 'none' ? {} : { authorization: `Bearer ${keys[key]}` }),
        ...(scenario.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...scenario.headers,
      },
      ...(scenario.body === undefined ? {} : { body: scenario.body }),
    });
  let response = await send();
  for (let sent = 1; scenario.untilRateLimited && response.status !== 429 && sent < 200; sent++) {
    await response.arrayBuffer();
    response = await send();
  }
  return (await response.json()) as Record<string, unknown>;
}

for (const { name: documentName, prefix, document, scenarios } of documents) {
  describe(`the error examples of ${documentName}`, () => {
    it('each have a scenario here, and each scenario an example', () => {
      expect([...errorExamples(document).keys()].sort()).toEqual(Object.keys(scenarios).sort());
    });

    for (const [name, scenario] of Object.entries(scenarios)) {
      it(`${name} is what the server answers`, async () => {
        const example = errorExamples(document).get(name)!;
        expect(example, name).toBeDefined();
        const docUrl = new URL(String(example.doc_url));
        expect(`${docUrl.pathname}${docUrl.hash}`).toBe(`${prefix}/docs/errors#${example.code}`);
        if ('text' in scenario) {
          expect(example.error).toBe(scenario.text);
          return;
        }
        const body = await answer(scenario);
        // The seconds to wait are the moment's: the example's figure stands for them.
        const expected =
          typeof example.retry_after === 'number'
            ? {
                ...example,
                retry_after: body.retry_after,
                error: String(example.error).replace(`${example.retry_after} s`, `${body.retry_after} s`),
              }
            : example;
        expect(body).toEqual({ ...expected, doc_url: `${scenario.relativeDocUrl ? '' : baseUrl}${docUrl.pathname}${docUrl.hash}` });
      });
    }
  });
}
