import { connect } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { bearer, buildTestApp } from './support/app';
import { addLicences, createOrgWithKeys } from './support/factories';
import { createProgramme } from './support/learning-fixture';
import { useTestApp } from './support/lifecycle';

// The edges every request may hit: values the code could not hold, bodies of the wrong kind,
// what Fastify and Node's HTTP parser answer by themselves, methods, and the operators' routes. Each
// answer is a declared status with the one error body `{ "error": "<French sentence>" }`.

const fixture = useTestApp({ rateLimitPerMinute: 100_000 });
let org: Awaited<ReturnType<typeof createOrgWithKeys>>;
let origin: string;

beforeAll(async () => {
  org = await createOrgWithKeys(fixture.db, { name: 'Formations Limites' });
  await addLicences(fixture.db, org.orgId, 'standard', 5);
  await createProgramme(fixture.db, org.orgId);
  await fixture.app.listen({ port: 0, host: '127.0.0.1' });
  origin = `http://127.0.0.1:${(fixture.app.server.address() as { port: number }).port}`;
});

const get = (url: string, headers: Record<string, string> = bearer(org.readKey)) => fixture.app.inject({ method: 'GET', url, headers });
const post = (payload: unknown, headers: Record<string, string> = {}) =>
  fixture.app.inject({
    method: 'POST',
    url: '/v1/users',
    headers: { ...bearer(org.writeKey), ...headers },
    payload: payload as string,
  });

function expectError(response: { statusCode: number; headers: Record<string, unknown>; json(): unknown }, status: number, message: RegExp) {
  expect(response.statusCode).toBe(status);
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  expect(response.json()).toEqual({ error: expect.stringMatching(message) });
}

/** A raw HTTP/1.1 exchange on a socket: what Node's parser and Fastify answer before any route. */
function raw(request: string | Buffer): Promise<{ status: number; headers: string; body: string }> {
  return new Promise((resolve, reject) => {
    const { hostname, port } = new URL(origin);
    const socket = connect({ host: hostname, port: Number(port) });
    let received = '';
    socket.on('data', (chunk) => {
      received += chunk;
    });
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = received.split('\r\n\r\n');
      resolve({ status: Number(head.split(' ')[1]), headers: head, body });
    });
    socket.write(request);
    // Ask to close once answered.
    setTimeout(() => socket.end(), 500);
  });
}

describe('values the code cannot hold are refused by the contract, naming the parameter', () => {
  it.each([
    ['offset=Infinity', 'offset'],
    ['offset=1e400', 'offset'],
    ['offset=10000001', 'offset'],
    ['offset=-0.5', 'offset'],
    ['limit=NaN', 'limit'],
    ['year=1e3', 'year'],
    ['year=99999999999999999999', 'year'],
    ['updated_since=0000-01-01', 'updated_since'],
    ['updated_since=2101-01-01', 'updated_since'],
    ['updated_since=1999-12-31', 'updated_since'],
    [`email=${'a'.repeat(250)}@exemple.fr`, 'email'],
    [`programme=${'a'.repeat(101)}`, 'programme'],
    ['programme=Pas_Un_Slug', 'programme'],
    ['year=2025&year=2026', 'year'],
  ])('%s', async (query, name) => {
    for (const resource of ['users', 'progress', 'enrollments']) {
      const response = await get(`/v1/${resource}?${query}`);
      expectError(response, 400, new RegExp(`« ${name} »`));
    }
  });

  it('says in words what a pattern means', async () => {
    expect((await get('/v1/logins?updated_since=0000-01-01')).json().error).toMatch(/une date AAAA-MM-JJ des années 2000 à 2100/);
    expect((await get('/v1/logins?programme=Pas_Un_Slug')).json().error).toMatch(/un slug de minuscules, chiffres et tirets/);
  });

  it('refuses an offset beyond the rows of one learner without reaching SQL, and the very last offset allowed works', async () => {
    const response = await get('/v1/users?offset=10000000');
    expect(response.statusCode).toBe(200);
    expect(response.json().pagination).toMatchObject({ offset: 10_000_000, count: 0 });
  });

  it('refuses bodies beyond their bounds: too many programme slugs, too long an email, a batch of tens of thousands', async () => {
    expectError(
      await post({ email: 'a@exemple.fr', programme_slugs: Array.from({ length: 101 }, (_, i) => `p${i}`) }),
      400,
      /programme_slugs.*au plus 100/,
    );
    expectError(await post({ email: `${'a'.repeat(330)}@exemple.fr` }), 400, /email.*au plus 320/);
    expectError(
      await post({ email: 'a@exemple.fr', programme_slugs: Array.from({ length: 40_000 }, (_, i) => `programme-${i}`) }),
      400,
      /programme_slugs/,
    );
    expectError(await post({ users: Array.from({ length: 20_000 }, (_, i) => ({ email: `a${i}@exemple.fr` })) }), 400, /users.*au plus 50/);
  });
});

describe('bodies the route must read', () => {
  it('answers a POST without a body, or with another type than JSON, with 400 or 415, and writes nothing', async () => {
    expectError(
      await fixture.app.inject({ method: 'POST', url: '/v1/users', headers: bearer(org.writeKey) }),
      400,
      /Corps de la requête manquant/,
    );
    expectError(await post('email=a@exemple.fr', { 'content-type': 'text/plain' }), 415, /Type de contenu non pris en charge/);
    expectError(await post('<users/>', { 'content-type': 'application/xml' }), 415, /Type de contenu non pris en charge/);
    expectError(await post('a,b', { 'content-type': 'text/csv' }), 415, /Type de contenu non pris en charge/);
    expectError(await post('{"email": ', { 'content-type': 'application/json' }), 400, /pas un JSON valide/);
    expectError(await post('', { 'content-type': 'application/json' }), 400, /vide/);
    expectError(await post('{"__proto__": {"x": 1}, "email": "a@exemple.fr"}', { 'content-type': 'application/json' }), 400, /JSON/);
    expectError(await post('[]', { 'content-type': 'application/json' }), 400, /Corps de la requête invalide/);
    expectError(await post('null', { 'content-type': 'application/json' }), 400, /Corps de la requête/);
    const tooLarge = JSON.stringify({ email: 'a@exemple.fr', pad: 'x'.repeat(1_100_000) });
    expectError(await post(tooLarge, { 'content-type': 'application/json' }), 413, /trop volumineux/);
    expect((await get('/v1/users')).json().pagination.total).toBe(0);
  });
});

describe('methods', () => {
  it('answers 401 before 405 or 404: a caller without a valid key learns nothing', async () => {
    for (const [method, url] of [
      ['DELETE', '/v1/users'],
      ['TRACE', '/v1/logins'],
      ['GET', '/v1/a/b'],
      ['HEAD', '/v1/summary'],
    ] as const) {
      const response = await fixture.app.inject({ method: method as 'GET', url });
      expect(response.statusCode, `${method} ${url}`).toBe(401);
    }
    expect((await fixture.app.inject({ method: 'GET', url: '/v1/a/b', headers: bearer(org.readKey) })).statusCode).toBe(404);
  });

  it('does not offer HEAD: 405 with Allow, and nothing is built', async () => {
    const response = await fixture.app.inject({
      method: 'HEAD',
      url: '/v1/activity-report?email=x@exemple.fr',
      headers: bearer(org.readKey),
    });
    expect(response.statusCode).toBe(405);
    expect(response.headers.allow).toBe('GET');
  });
});

describe('what Fastify and Node answer by themselves, in the one error shape', () => {
  it('an invalid percent-encoding in the path: 400', async () => {
    const response = await raw(`GET /v1/%ff HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${org.readKey}\r\n\r\n`);
    expect(response.status).toBe(400);
    expect(JSON.parse(response.body)).toEqual({ error: expect.stringMatching(/encodage/) });
  });

  it('a path segment over 100 characters, and a URL over 8 KiB: 414', async () => {
    const long = await raw(`GET /v1/${'r'.repeat(150)} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${org.readKey}\r\n\r\n`);
    expect(long.status).toBe(414);
    expect(JSON.parse(long.body)).toEqual({ error: expect.stringMatching(/Adresse trop longue/) });
    const url = await raw(`GET /v1/users?x=${'y'.repeat(9000)} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${org.readKey}\r\n\r\n`);
    expect(url.status).toBe(414);
    expect(JSON.parse(url.body)).toEqual({ error: expect.stringMatching(/Adresse trop longue/) });
  });

  it('headers over 16 KiB: 431', async () => {
    const response = await raw(`GET /v1/users HTTP/1.1\r\nHost: x\r\nX-Padding: ${'p'.repeat(20_000)}\r\n\r\n`);
    expect(response.status).toBe(431);
    expect(response.headers).toMatch(/content-type: application\/json/i);
    expect(JSON.parse(response.body)).toEqual({ error: expect.stringMatching(/En-têtes de la requête trop volumineux/) });
  });

  it('malformed HTTP and an unknown method token: 400', async () => {
    for (const request of ['BONJOUR\r\n\r\n', 'FOO /v1/users HTTP/1.1\r\nHost: x\r\n\r\n', 'GET /v1/users HTTP/1.1\r\nHost x\r\n\r\n']) {
      const response = await raw(request);
      expect(response.status, request).toBe(400);
      expect(JSON.parse(response.body)).toEqual({ error: expect.stringMatching(/Requête HTTP mal formée/) });
    }
  });

  it('an unknown address outside the API: 404 in the same shape', async () => {
    const response = await fixture.app.inject({ method: 'GET', url: '/nulle-part' });
    expectError(response, 404, /Adresse inconnue/);
  });
});

describe('the operators’ routes', () => {
  it('liveness and readiness need no key and count against nothing', async () => {
    const limited = await buildTestApp(fixture.db, { rateLimitPerMinute: 2 });
    // Keys of their own: the budget is shared with every server on the database.
    const fresh = await createOrgWithKeys(fixture.db);
    try {
      for (let i = 0; i < 5; i += 1) {
        expect((await limited.inject({ url: '/livez' })).json()).toEqual({ statut: 'en vie' });
        expect((await limited.inject({ url: '/readyz' })).json()).toEqual({ statut: 'prêt' });
      }
      // The key still has its whole budget.
      const first = await limited.inject({ url: '/v1/summary', headers: bearer(fresh.readKey) });
      expect(first.headers['x-ratelimit-remaining']).toBe('1');
      // A server that is stopping is not ready, and says so to the API's callers too.
      limited.startDraining();
      const ready = await limited.inject({ url: '/readyz' });
      expectError(ready, 503, /s’arrête/);
      expect(ready.headers['retry-after']).toBe('5');
      expect((await limited.inject({ url: '/livez' })).statusCode).toBe(200);
      const api = await limited.inject({ url: '/v1/summary', headers: bearer(fresh.readKey) });
      expectError(api, 503, /s’arrête/);
      expect(api.headers.connection).toBe('close');
    } finally {
      await limited.close();
    }
  });

  it('serves Prometheus metrics: requests by route and status, rate-limit refusals, the webhook queue', async () => {
    const limited = await buildTestApp(fixture.db, { rateLimitPerMinute: 1 });
    const fresh = await createOrgWithKeys(fixture.db);
    try {
      await limited.inject({ url: '/v1/summary', headers: bearer(fresh.readKey) });
      await limited.inject({ url: '/v1/summary', headers: bearer(fresh.readKey) });
      await limited.inject({ url: '/v1/users?limit=0', headers: bearer(fresh.writeKey) });
      const response = await limited.inject({ url: '/metrics' });
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toMatch(/^text\/plain/);
      const text = response.body;
      expect(text).toMatch(/partner_api_http_requests_total\{route="\/v1\/summary",method="GET",status="200"\} 1/);
      expect(text).toMatch(/partner_api_http_requests_total\{route="\/v1\/summary",method="GET",status="429"\} 1/);
      expect(text).toMatch(/partner_api_http_requests_total\{route="\/v1\/users",method="GET",status="400"\} 1/);
      expect(text).toMatch(/partner_api_http_request_duration_seconds_bucket\{le="0.1",route="\/v1\/summary",status="200"\}/);
      expect(text).toMatch(/partner_api_rate_limit_refusals_total\{bucket="key"\} 1/);
      expect(text).toMatch(/partner_api_webhook_queue_pending 0/);
      expect(text).toMatch(/partner_api_webhook_queue_oldest_due_seconds 0/);
      expect(text).toMatch(/partner_api_webhook_endpoints_disabled 0/);
      expect(text).toMatch(/partner_api_process_cpu_seconds_total/);
      // The operators' own routes are not counted.
      expect(text).not.toMatch(/route="\/metrics"/);
    } finally {
      await limited.close();
    }
  });

  it('behind a trusted load balancer, limits calls without a valid key by the client address it forwards', async () => {
    const behind = await buildTestApp(fixture.db, { rateLimitPerMinute: 2, trustProxy: '127.0.0.1' });
    try {
      const guess = (client: string) =>
        behind.inject({ url: '/v1/summary', headers: { authorization: 'Bearer sk_live_devine', 'x-forwarded-for': client } });
      expect((await guess('203.0.113.1')).statusCode).toBe(401);
      expect((await guess('203.0.113.1')).statusCode).toBe(401);
      expect((await guess('203.0.113.1')).statusCode).toBe(429);
      // Another client behind the same balancer has its own budget.
      expect((await guess('203.0.113.2')).statusCode).toBe(401);
    } finally {
      await behind.close();
    }
  });
});
