import { connect } from 'node:net';
import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { takeAtomicPickingTurn } from '../db/enrolment';
import { createEndpoint } from '../db/webhook-endpoints';
import { recordAttempts, recordEvent, takeDueDeliveries } from '../db/webhooks';
import { operatorActor } from '../scripts/command';
import { buildApp } from '../src/http/app';
import { countWebhookAttempts } from '../src/http/metrics';
import { resumeWebhookEndpoint, suspendWebhookEndpoint } from '../src/webhook-endpoints';
import { generateWebhookSecret } from '../src/webhooks/signature';
import { startWebhookDelivery } from '../src/webhooks/worker';
import { anErrorBody, bearer, buildTestApp, testConfig, testContext } from './support/app';
import { addLicences, createKey, createOrgWithKeys } from './support/factories';
import { createProgramme } from './support/learning-fixture';
import { useTestApp } from './support/lifecycle';
import { eventually, startWebhookReceiver } from './support/webhook-receiver';

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
  expect(response.json()).toEqual(anErrorBody(expect.stringMatching(message)));
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

  it.each([
    ['offset=0x10', 'offset'],
    ['offset=0b11', 'offset'],
    ['offset=0o7', 'offset'],
    ['year=2e3', 'year'],
    ['limit=+5', 'limit'],
    ['limit=%205%20', 'limit'],
    ['limit=5.0', 'limit'],
    ['limit=', 'limit'],
    ['offset=-0.5', 'offset'],
  ])('a number not written in plain decimal: %s', async (query, name) => {
    const response = await get(`/v1/logins?${query}`);
    expectError(response, 400, new RegExp(`^Paramètre « ${name} » invalide : il doit être un nombre entier écrit en chiffres décimaux`));
  });

  it('takes a plain decimal number, leading zeros included', async () => {
    const response = await get('/v1/users?limit=05&offset=0&year=2026');
    expect(response.statusCode).toBe(200);
    expect(response.json().pagination).toMatchObject({ limit: 5, offset: 0 });
  });

  it('holds the If-None-Match header to its declared 1000 characters, naming it as the document does', async () => {
    const tag = (length: number) => `W/"${'a'.repeat(length - 4)}"`;
    expect(tag(1001)).toHaveLength(1001);
    expectError(
      await get('/v1/users', { ...bearer(org.readKey), 'If-None-Match': tag(1001) }),
      400,
      /^En-tête « If-None-Match » invalide : il doit contenir au plus 1000 caractères\.$/,
    );
    expect((await get('/v1/users', { ...bearer(org.readKey), 'if-none-match': tag(1000) })).statusCode).toBe(200);
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
    expect(JSON.parse(response.body)).toEqual(anErrorBody(expect.stringMatching(/encodage/)));
  });

  it('a path segment over 100 characters, and a URL over 8 KiB: 414', async () => {
    const long = await raw(`GET /v1/${'r'.repeat(150)} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${org.readKey}\r\n\r\n`);
    expect(long.status).toBe(414);
    expect(JSON.parse(long.body)).toEqual(anErrorBody(expect.stringMatching(/Adresse trop longue/)));
    const url = await raw(`GET /v1/users?x=${'y'.repeat(9000)} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${org.readKey}\r\n\r\n`);
    expect(url.status).toBe(414);
    expect(JSON.parse(url.body)).toEqual(anErrorBody(expect.stringMatching(/Adresse trop longue/)));
  });

  it('headers over 16 KiB: 431', async () => {
    const response = await raw(`GET /v1/users HTTP/1.1\r\nHost: x\r\nX-Padding: ${'p'.repeat(20_000)}\r\n\r\n`);
    expect(response.status).toBe(431);
    expect(response.headers).toMatch(/content-type: application\/json/i);
    expect(JSON.parse(response.body)).toEqual(anErrorBody(expect.stringMatching(/En-têtes de la requête trop volumineux/)));
    // Refused before there is a request: no Host to link with, and never the address listened on.
    expect(JSON.parse(response.body).doc_url).toBe('/v1/docs/errors#headers_too_large');
  });

  it('malformed HTTP and an unknown method token: 400', async () => {
    for (const request of ['BONJOUR\r\n\r\n', 'FOO /v1/users HTTP/1.1\r\nHost: x\r\n\r\n', 'GET /v1/users HTTP/1.1\r\nHost x\r\n\r\n']) {
      const response = await raw(request);
      expect(response.status, request).toBe(400);
      expect(JSON.parse(response.body)).toEqual(anErrorBody(expect.stringMatching(/Requête HTTP mal formée/)));
    }
  });

  it('a Host that makes no address: the same answers, their links relative, never a 500', async () => {
    for (const host of ['localhost:abc', '[::1', 'a%b']) {
      const response = await raw(`GET /v1/summary HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
      expect(response.status, host).toBe(401);
      expect(JSON.parse(response.body), host).toEqual(anErrorBody(expect.stringMatching(/Clé API manquante/), 'key_missing'));
      expect(JSON.parse(response.body).doc_url, host).toBe('/v1/docs/errors#key_missing');
    }
  });

  it('an HTTP/1.1 request without Host: 400 in the one shape; HTTP/1.0 needs none', async () => {
    const response = await raw(`GET /v1/summary HTTP/1.1\r\nAuthorization: Bearer ${org.readKey}\r\n\r\n`);
    expect(response.status).toBe(400);
    expect(response.headers).toMatch(/content-type: application\/json/i);
    expect(JSON.parse(response.body)).toEqual(anErrorBody(expect.stringMatching(/en-tête Host est obligatoire/)));
    // Without its Host, the server does not know the address it is reached at: the link is relative.
    expect(JSON.parse(response.body).doc_url).toBe('/v1/docs/errors#bad_request');
    const old = await raw(`GET /v1/summary HTTP/1.0\r\nAuthorization: Bearer ${org.readKey}\r\n\r\n`);
    expect(old.status).toBe(200);
    expect(JSON.parse(old.body)).toMatchObject({ resource: 'summary' });
  });

  it('an expectation other than 100-continue is ignored, as RFC 9110 allows: the request is served', async () => {
    const response = await raw(`GET /v1/summary HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nAuthorization: Bearer ${org.readKey}\r\n\r\n`);
    expect(response.status).toBe(200);
    expect(JSON.parse(response.body)).toMatchObject({ resource: 'summary' });
  });

  it('CONNECT meets the routes like any method: 401 without a key, 405 with Allow, 404 elsewhere, then the connection closes', async () => {
    const anonymous = await raw('CONNECT /v1/users HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(anonymous.status).toBe(401);
    expect(JSON.parse(anonymous.body)).toEqual(anErrorBody(expect.stringMatching(/Clé API manquante/)));
    const known = await raw(`CONNECT /v1/users HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${org.readKey}\r\n\r\n`);
    expect(known.status).toBe(405);
    expect(known.headers).toMatch(/^allow: GET, POST$/im);
    expect(known.headers).toMatch(/^connection: close$/im);
    expect(JSON.parse(known.body)).toEqual(
      anErrorBody('Méthode CONNECT non autorisée : cette adresse accepte GET, POST.', 'method_not_allowed'),
    );
    const tunnel = await raw('CONNECT exemple.fr:443 HTTP/1.1\r\nHost: exemple.fr:443\r\n\r\n');
    expect(tunnel.status).toBe(404);
    expect(JSON.parse(tunnel.body)).toEqual(anErrorBody(expect.stringMatching(/Adresse inconnue/)));
  });

  it('a 400 Fastify gives by itself with a code we do not map: a generic French sentence (not "not valid JSON"), its detail logged', async () => {
    const lines: Record<string, any>[] = [];
    const logged = await buildTestApp(fixture.db, { logLevel: 'info' }, { logStream: { write: (line) => lines.push(JSON.parse(line)) } });
    try {
      // The request body stream fails while Fastify reads it: Fastify answers 400 with that stream's error.
      const response = await logged.inject({
        method: 'POST',
        url: '/v1/users',
        headers: { ...bearer(org.writeKey), 'content-type': 'application/json' },
        payload: '{"email": "a@exemple.fr"}',
        simulate: { error: true, end: true, split: false, close: false },
      });
      expectError(response, 400, /^Requête invalide : vérifiez l’adresse, les en-têtes et le corps envoyés\.$/);
      expect(lines).toContainEqual(
        expect.objectContaining({
          level: 30,
          msg: 'requête refusée par le framework',
          err: expect.objectContaining({ message: 'Simulated' }),
        }),
      );
    } finally {
      await logged.close();
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

  it('answers HEAD on liveness and readiness like GET, without a body', async () => {
    for (const url of ['/livez', '/readyz']) {
      const [head, got] = [await fixture.app.inject({ method: 'HEAD', url }), await fixture.app.inject({ url })];
      expect(head.statusCode, url).toBe(200);
      expect(head.body, url).toBe('');
      expect(head.headers['content-type']).toBe(got.headers['content-type']);
      expect(head.headers['content-length']).toBe(got.headers['content-length']);
    }
    const onTheWire = await raw('HEAD /livez HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(onTheWire.status).toBe(200);
    expect(onTheWire.body).toBe('');
    // HEAD is still not offered below /v1 (see 'does not offer HEAD').
  });

  it('logs the operators’ routes at debug level, not info: probes come every few seconds', async () => {
    const lines: { level: number; msg: string; req?: { url?: string } }[] = [];
    const write = (line: string) => lines.push(JSON.parse(line));
    const atInfo = await buildTestApp(fixture.db, { logLevel: 'info' }, { logStream: { write } });
    const atDebug = await buildTestApp(fixture.db, { logLevel: 'debug' }, { logStream: { write } });
    try {
      for (const app of [atInfo, atDebug]) {
        for (const url of ['/livez', '/readyz', '/metrics']) await app.inject({ url });
        await app.inject({ method: 'HEAD', url: '/livez' });
        await app.inject({ url: '/v1/summary', headers: bearer(org.readKey) });
      }
      const operational = lines.filter((line) => /^\/(livez|readyz|metrics)/.test(line.req?.url ?? ''));
      expect(operational.length).toBeGreaterThanOrEqual(4);
      expect(operational.every((line) => line.level === 20 && line.msg === 'requête d’exploitation servie')).toBe(true);
      // The API's own requests are still logged at info.
      expect(lines.filter((line) => line.level === 30 && line.req?.url === '/v1/summary')).toHaveLength(2);
    } finally {
      await atInfo.close();
      await atDebug.close();
    }
  });

  it('serves Prometheus metrics: requests by route and status, rate-limit refusals, the webhook queue', async () => {
    const limited = await buildTestApp(fixture.db, { rateLimitPerMinute: 1 });
    const fresh = await createOrgWithKeys(fixture.db);
    try {
      await limited.inject({ url: '/v1/summary', headers: bearer(fresh.readKey) });
      await limited.inject({ url: '/v1/summary', headers: bearer(fresh.readKey) });
      await limited.inject({ url: '/v1/users?limit=0', headers: bearer(fresh.writeKey) });
      const another = await createKey(fixture.db, fresh.orgId, ['read', 'write']);
      await limited.inject({ method: 'POST', url: '/v1/users', headers: bearer(another.key), payload: {} });
      const response = await limited.inject({ url: '/metrics' });
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toMatch(/^text\/plain/);
      const text = response.body;
      expect(text).toMatch(/partner_api_http_requests_total\{route="\/v1\/summary",method="GET",status="200"\} 1/);
      expect(text).toMatch(/partner_api_http_requests_total\{route="\/v1\/summary",method="GET",status="429"\} 1/);
      expect(text).toMatch(/partner_api_http_requests_total\{route="\/v1\/users",method="GET",status="400"\} 1/);
      expect(text).toMatch(/partner_api_http_request_duration_seconds_bucket\{le="0.1",route="\/v1\/summary",method="GET",status="200"\}/);
      // GET and POST of one route are told apart in durations too.
      expect(text).toMatch(/partner_api_http_request_duration_seconds_count\{route="\/v1\/users",method="GET",status="400"\} 1/);
      expect(text).toMatch(/partner_api_http_request_duration_seconds_count\{route="\/v1\/users",method="POST",status="400"\} 1/);
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

  it('counts webhook attempts by outcome: succeeded, failed (a retry is planned) and dead (the last attempt failed)', async () => {
    const context = testContext(fixture.db);
    const app = await buildApp(context);
    const failing = await startWebhookReceiver(() => ({ status: 500 }));
    const answering = await startWebhookReceiver();
    // Two attempts at most: the failing endpoint's first attempt is `failed`, its second `dead`.
    const worker = await startWebhookDelivery({
      connectionString: fixture.url,
      db: fixture.db,
      config: testConfig({ webhookAllowInsecure: true, webhookRetryDelaysSeconds: [0.2], webhookTimeoutMs: 2000 }),
      onAttempts: countWebhookAttempts(context.metrics),
    });
    try {
      const hooks = await createOrgWithKeys(fixture.db, { name: 'Formations Crochets' });
      for (const url of [failing.url, answering.url])
        await createEndpoint(fixture.db, { orgId: hooks.orgId, url, secret: generateWebhookSecret(), eventTypes: ['learner.enrolled'] });
      await recordEvent(fixture.db, {
        orgId: hooks.orgId,
        type: 'learner.enrolled',
        data: {
          learner: { user_id: '0f8c2d4e-6a1b-4c3d-8e9f-1a2b3c4d5e6f', email: 'claire.martin@exemple.fr', name: 'Claire Martin' },
          status: 'active',
          programmes: [],
        },
      });
      const text = await eventually(
        async () => (await app.inject({ url: '/metrics' })).body,
        (body) => /partner_api_webhook_attempts_total\{outcome="dead"\} 1/.test(body),
      );
      expect(text).toMatch(/partner_api_webhook_attempts_total\{outcome="succeeded"\} 1\n/);
      expect(text).toMatch(/partner_api_webhook_attempts_total\{outcome="failed"\} 1\n/);
      expect(text).toMatch(/partner_api_webhook_attempts_total\{outcome="dead"\} 1\n/);
      expect(failing.received).toHaveLength(2);
    } finally {
      await worker.stop();
      await Promise.all([failing.close(), answering.close(), app.close()]);
      await context.renderPool.close();
    }
  });

  it('counts as due only the deliveries whose job is due: not a retry planned later, nor one set aside while its endpoint is disabled', async () => {
    const gauges = async () => {
      const text = (await fixture.app.inject({ url: '/metrics' })).body;
      const gauge = (name: string) => Number(new RegExp(`^partner_api_webhook_${name} (\\S+)$`, 'm').exec(text)![1]);
      return {
        pending: gauge('queue_pending'),
        due: gauge('queue_due'),
        oldestDue: gauge('queue_oldest_due_seconds'),
        disabled: gauge('endpoints_disabled'),
      };
    };
    const before = await gauges();
    // A scrape reads the queue again once the last reading is 100 ms old: the readings below wait for a change.
    const queued = await createOrgWithKeys(fixture.db, { name: 'Formations Files' });
    // Nothing listens on port 9: no worker runs here, and one would only fail to connect.
    const [, planned, setAside] = await Promise.all(
      ['due', 'planned', 'set-aside'].map((path) =>
        createEndpoint(fixture.db, {
          orgId: queued.orgId,
          url: `http://127.0.0.1:9/${path}`,
          secret: generateWebhookSecret(),
          eventTypes: ['learner.enrolled'],
        }),
      ),
    );
    const event = await recordEvent(fixture.db, {
      orgId: queued.orgId,
      type: 'learner.enrolled',
      data: {
        learner: { user_id: '3b1f7a52-9c4e-4d8a-b6e2-0c5d7f9a1e34', email: 'lea.petit@exemple.fr', name: 'Léa Petit' },
        status: 'active',
        programmes: [],
      },
    });
    const deliveries = await fixture.db
      .selectFrom('webhook_deliveries')
      .select(['id', 'endpoint_id', 'job_id'])
      .where('event_id', '=', event.id)
      .execute();
    const jobOf = (endpointId: string) => {
      const delivery = deliveries.find((d) => d.endpoint_id === endpointId)!;
      return { id: delivery.job_id!, data: { deliveryId: delivery.id } };
    };
    // A failed first attempt: its retry is planned an hour later.
    const [taken] = await takeDueDeliveries(fixture.db, [jobOf(planned.id)]);
    await recordAttempts(
      fixture.db,
      [
        {
          delivery: taken!,
          outcome: {
            attemptedAt: new Date(),
            durationMs: 1,
            statusCode: 500,
            succeeded: false,
            error: 'réponse HTTP 500',
            errorCode: 'http_status',
            responseExcerpt: null,
          },
        },
      ],
      { retryDelaysSeconds: [3600], disableAfter: 50 },
    );
    // Its endpoint disabled, a delivery is set aside when its job comes; this one has waited an hour.
    await suspendWebhookEndpoint(fixture.db, setAside.org_id, setAside.id, operatorActor);
    expect(await takeDueDeliveries(fixture.db, [jobOf(setAside.id)])).toEqual([]);
    await sql`update webhook_deliveries set next_attempt_at = now() - interval '1 hour' where id = ${jobOf(setAside.id).data.deliveryId}`.execute(
      fixture.db,
    );

    const after = await eventually(gauges, (state) => state.pending !== before.pending, 2000);
    expect(after.pending - before.pending).toBe(3);
    expect(after.due - before.due).toBe(1);
    expect(after.oldestDue).toBeLessThan(600);
    expect(after.disabled - before.disabled).toBe(1);
    // Enabled again, its endpoint's delivery gets a job due now.
    await resumeWebhookEndpoint(fixture.db, setAside.org_id, setAside.id, operatorActor);
    const enabled = await eventually(gauges, (state) => state.due !== after.due, 2000);
    expect(enabled.due - before.due).toBe(2);
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

describe('the answer deadline (REQUEST_TIMEOUT_MS)', () => {
  /** Sessions of this test database waiting for an advisory lock. */
  const advisoryLockWaiters = async () =>
    (
      await sql<{ waiting: number }>`
        select count(*)::int as waiting from pg_locks
        where locktype = 'advisory' and not granted and database = (select oid from pg_database where datname = current_database())`.execute(
        fixture.db,
      )
    ).rows[0]!.waiting;

  it('cuts a read that is late with a 503, but never a write: a slow enrolment answers its real outcome', async () => {
    const hurried = await buildTestApp(fixture.db, { requestTimeoutMs: 100, rateLimitPerMinute: 100_000 });
    const slow = await createOrgWithKeys(fixture.db, { name: 'Formations Lentes' });
    await addLicences(fixture.db, slow.orgId, 'standard', 1);
    /** Runs `during` while another transaction holds what `hold` takes. */
    const whileHeld = async <T>(hold: (trx: typeof fixture.db) => Promise<unknown>, during: () => Promise<T>): Promise<T> => {
      let release!: () => void;
      let held!: () => void;
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      const isHeld = new Promise<void>((resolve) => {
        held = resolve;
      });
      const holder = fixture.db.transaction().execute(async (trx) => {
        await hold(trx);
        held();
        await released;
      });
      await isHeld;
      try {
        return await during();
      } finally {
        release();
        await holder;
      }
    };
    try {
      // A read blocked past the deadline: 503, try again.
      const read = await whileHeld(
        (trx) => sql`lock table memberships in access exclusive mode`.execute(trx),
        () => hurried.inject({ url: '/v1/users', headers: bearer(slow.readKey) }),
      );
      expectError(read, 503, /n’a pas pu être préparée en 0.1 s/);

      // An atomic batch waits for the organisation's turn to pick licences, held here until the
      // enrolment is seen waiting for it, and then well past the deadline.
      let enrolment!: Promise<LightMyRequestResponse>;
      await whileHeld(
        (trx) => takeAtomicPickingTurn(trx, slow.orgId),
        async () => {
          enrolment = hurried.inject({
            method: 'POST',
            url: '/v1/users',
            headers: bearer(slow.writeKey),
            payload: { users: [{ email: 'lente@exemple.fr' }], atomic: true },
          });
          await eventually(advisoryLockWaiters, (waiting) => waiting > 0);
          await new Promise((resolve) => setTimeout(resolve, 500));
        },
      );
      const response = await enrolment;
      expect(response.statusCode).toBe(200);
      expect(response.json().results).toEqual([expect.objectContaining({ email: 'lente@exemple.fr', status: 'pending' })]);
      const users = (await hurried.inject({ url: '/v1/users', headers: bearer(slow.readKey) })).json();
      expect(users.data.map((user: { email: string }) => user.email)).toEqual(['lente@exemple.fr']);
    } finally {
      await hurried.close();
    }
  });
});
