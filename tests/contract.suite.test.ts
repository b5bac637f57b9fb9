import { createServer } from 'node:http';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addLicences, createKey } from './support/factories';
import { seededOrganisation, seededYear } from './support/learning-factories';
import { useTestApp } from './support/lifecycle';
import { listResourceNames } from './support/list-resources';
import { documentedHeaders, responseErrors } from './support/openapi-validator';
import { type PrismProcess, startPrism } from './support/prism';

/**
 * One contract suite, several targets: Prism's mock (static examples and dynamic data) and the
 * real server, directly and through `prism proxy --errors`. The same cases run against each; the
 * mock is told which documented response to give (`Prefer: code=…`) where only real data decides.
 */
interface Target {
  name: string;
  baseUrl: string;
  kind: 'mock' | 'real' | 'proxy';
  keys: { read: string; write: string; spare: string };
}

interface ContractCase {
  name: string;
  method?: 'GET' | 'POST' | 'DELETE';
  url: string;
  /** The documented operation whose response schema applies. */
  operation: [path: string, method: string];
  status: number;
  mediaType?: 'application/json' | 'text/csv' | 'application/pdf';
  key?: 'read' | 'write' | 'none';
  body?: unknown;
  /** Not through the proxy: Prism's proxy corrupts binary bodies (STACK.md). */
  directOnly?: boolean;
  /** An operation of `x-unlisted-paths` (GET /{resource}), out of `paths`: Prism, mock or proxy, knows nothing of it. */
  unlisted?: boolean;
  /** The request itself breaks the document (no key, a parameter out of its rule, a method it does
   * not declare): Prism answers it on its own, so it is checked on the mock and the server only. */
  invalidRequest?: boolean;
}

const listPaths = listResourceNames.map((name) => `/${name}`);
/** A learner of the seeded organisation, with activity (the mock's examples name theirs). */
let learnerEmail = '';

const buildCases = (): ContractCase[] => [
  ...listPaths.map(
    (path): ContractCase => ({ name: `GET ${path}`, url: `${path}?limit=5&year=${seededYear}`, operation: [path, 'get'], status: 200 }),
  ),
  ...listPaths.map(
    (path): ContractCase => ({
      name: `GET ${path} en CSV`,
      url: `${path}?format=csv`,
      operation: [path, 'get'],
      status: 200,
      mediaType: 'text/csv',
    }),
  ),
  { name: 'GET /summary', url: '/summary', operation: ['/summary', 'get'], status: 200 },
  {
    name: 'GET /users pour un apprenant',
    url: `/users?email=${encodeURIComponent(learnerEmail)}`,
    operation: ['/users', 'get'],
    status: 200,
  },
  {
    name: 'GET /activity-report',
    url: `/activity-report?email=${encodeURIComponent(learnerEmail)}&year=${seededYear}`,
    operation: ['/activity-report', 'get'],
    status: 200,
    mediaType: 'application/pdf',
    directOnly: true,
  },
  {
    name: 'POST /users (un apprenant)',
    method: 'POST',
    url: '/users',
    key: 'write',
    body: { email: 'nouvel.apprenant@exemple.fr' },
    operation: ['/users', 'post'],
    status: 201,
  },
  {
    name: 'POST /users (lot)',
    method: 'POST',
    url: '/users',
    key: 'write',
    body: { users: [{ email: 'lot.un@exemple.fr' }, { email: learnerEmail }] },
    operation: ['/users', 'post'],
    status: 200,
  },
  { name: '401 sans clé', url: '/users', key: 'none', operation: ['/users', 'get'], status: 401, invalidRequest: true },
  {
    name: '403 clé en lecture sur POST /users',
    method: 'POST',
    url: '/users',
    key: 'read',
    body: { email: 'x.y@exemple.fr' },
    operation: ['/users', 'post'],
    status: 403,
  },
  { name: '404 ressource inconnue', url: '/cours', operation: ['/{resource}', 'get'], status: 404, unlisted: true },
  { name: '404 apprenant inconnu', url: '/users?email=inconnu@exemple.fr', operation: ['/users', 'get'], status: 404 },
  { name: '400 paramètre hors règle', url: '/users?limit=0', operation: ['/users', 'get'], status: 400, invalidRequest: true },
  { name: '400 rapport sans apprenant', url: '/activity-report', operation: ['/activity-report', 'get'], status: 400 },
  {
    name: '409 déjà membre',
    method: 'POST',
    url: '/users',
    key: 'write',
    body: { email: learnerEmail },
    operation: ['/users', 'post'],
    status: 409,
  },
  { name: '405 méthode non autorisée', method: 'DELETE', url: '/users', operation: ['/users', 'get'], status: 405, invalidRequest: true },
];

async function send(target: Target, testCase: ContractCase, key: string | null) {
  const headers: Record<string, string> = {};
  if (key) headers.authorization = `Bearer ${key}`;
  if (testCase.mediaType === 'text/csv') headers.accept = 'text/csv';
  // The mock cannot know our data: it is asked for the documented response the case expects.
  if (target.kind === 'mock' && testCase.status !== 200 && testCase.status !== 405 && testCase.key !== 'none')
    headers.prefer = `code=${testCase.status}`;
  if (target.kind === 'mock' && testCase.status === 201) headers.prefer = 'code=201';
  if (testCase.body !== undefined) headers['content-type'] = 'application/json';
  return fetch(target.baseUrl + testCase.url, {
    method: testCase.method ?? 'GET',
    headers,
    ...(testCase.body === undefined ? {} : { body: JSON.stringify(testCase.body) }),
  });
}

async function checkCase(target: Target, testCase: ContractCase) {
  const key = testCase.key === 'none' ? null : target.keys[testCase.key ?? 'read'];
  const response = await send(target, testCase, key);
  const label = `${target.name} — ${testCase.name}`;
  if (!testCase.invalidRequest) expect(response.headers.get('sl-violations'), `${label}: violations Prism`).toBeNull();
  expect(response.status, label).toBe(testCase.status);
  const contentType = response.headers.get('content-type') ?? '';
  if (testCase.status === 405) {
    // Prism answers methods the document has no operation for with its own problem+json; the
    // server answers with the 405 every operation declares, and says what is allowed.
    if (target.kind === 'mock') return;
    expect(response.headers.get('allow'), label).toBe('GET, POST');
  }
  const mediaType = testCase.mediaType ?? 'application/json';
  expect(contentType, label).toContain(mediaType);
  if (mediaType === 'application/json') {
    const errors = responseErrors(testCase.operation[0], testCase.operation[1], testCase.status, await response.json());
    expect(errors, label).toEqual([]);
  } else if (mediaType === 'text/csv') {
    // Bytes, not text(): the WHATWG decoder drops a BOM silently.
    const bytes = Buffer.from(await response.arrayBuffer());
    const hasBom = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
    const text = bytes.subarray(hasBom ? 3 : 0).toString('utf8');
    // The dynamic mock makes up any string for a CSV; examples and the server send a header row.
    if (target.name !== 'mock dynamique') expect(text.split(/\r?\n/)[0], label).toMatch(/^[a-z_.]+(,[a-z_.]+)*$/);
    if (target.kind !== 'mock') expect(hasBom, `${label}: BOM`).toBe(true);
  } else {
    const bytes = Buffer.from(await response.arrayBuffer());
    if (target.kind !== 'mock') expect(bytes.subarray(0, 5).toString('latin1'), label).toBe('%PDF-');
  }
  if (target.kind !== 'mock') {
    for (const header of documentedHeaders(testCase.operation[0], testCase.operation[1], testCase.status)) {
      // Conditional headers: ETag and Link when they apply, Content-Disposition on files only.
      if (header === 'etag' || header === 'link' || (header === 'content-disposition' && mediaType === 'application/json')) continue;
      expect(response.headers.get(header), `${label}: en-tête ${header}`).not.toBeNull();
    }
  }
}

async function checkRateLimit(target: Target) {
  let response: Response | undefined;
  if (target.kind === 'mock') {
    response = await fetch(`${target.baseUrl}/users`, { headers: { authorization: `Bearer ${target.keys.spare}`, prefer: 'code=429' } });
  } else {
    for (let i = 0; i < 200 && response?.status !== 429; i++) {
      response = await fetch(`${target.baseUrl}/summary`, { headers: { authorization: `Bearer ${target.keys.spare}` } });
    }
  }
  expect(response!.status).toBe(429);
  const retryAfter = Number(response!.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThan(0);
  const body = (await response!.json()) as { retry_after: number };
  expect(responseErrors('/users', 'get', 429, body)).toEqual([]);
  if (target.kind !== 'mock') expect(body.retry_after).toBe(retryAfter);
}

const fixture = useTestApp();
const prisms: PrismProcess[] = [];
const targets: Target[] = [];

beforeAll(async () => {
  // Real data from the generator, so every row schema meets real values (nulls, accents, Oui/Non).
  const org = await seededOrganisation(fixture.db, { name: 'Formations Horizon', learners: 12, seed: 7 });
  await addLicences(fixture.db, org.orgId, 'standard', 10);
  const busiest = await fixture.db
    .selectFrom('logins')
    .innerJoin('memberships', 'memberships.id', 'logins.membership_id')
    .innerJoin('accounts', 'accounts.id', 'memberships.account_id')
    .select('accounts.email')
    .where('logins.org_id', '=', org.orgId)
    .groupBy('accounts.email')
    .orderBy(sql`count(*)`, 'desc')
    .limit(1)
    .executeTakeFirstOrThrow();
  learnerEmail = busiest.email;
  await fixture.app.listen({ port: 0, host: '127.0.0.1' });
  const realUrl = `http://127.0.0.1:${(fixture.app.server.address() as { port: number }).port}/v1`;
  const spareReal = (await createKey(fixture.db, org.orgId, ['read'])).key;
  const spareProxy = (await createKey(fixture.db, org.orgId, ['read'])).key;
  const [staticMock, dynamicMock, proxy] = await Promise.all([
    startPrism({ mock: 'static' }),
    startPrism({ mock: 'dynamic' }),
    startPrism({ proxyTo: realUrl }),
  ]);
  prisms.push(staticMock, dynamicMock, proxy);
  const mockKeys = { read: 'sk_live_mock', write: 'sk_live_mock', spare: 'sk_live_mock' };
  targets.push(
    { name: 'mock statique', baseUrl: staticMock.baseUrl, kind: 'mock', keys: mockKeys },
    { name: 'mock dynamique', baseUrl: dynamicMock.baseUrl, kind: 'mock', keys: mockKeys },
    { name: 'serveur réel', baseUrl: realUrl, kind: 'real', keys: { read: org.readKey, write: org.writeKey, spare: spareReal } },
    {
      name: 'serveur réel via prism proxy --errors',
      baseUrl: proxy.baseUrl,
      kind: 'proxy',
      keys: { read: org.readKey, write: org.writeKey, spare: spareProxy },
    },
  );
}, 180_000);

afterAll(async () => {
  await Promise.all(prisms.map((prism) => prism.stop()));
});

describe('the contract, against the mock and the real server', () => {
  for (const kind of ['mock statique', 'mock dynamique', 'serveur réel', 'serveur réel via prism proxy --errors']) {
    it(`${kind}: every operation and error answers as openapi.yaml says`, async () => {
      const target = targets.find((t) => t.name === kind)!;
      // The real server keeps state: the enrolments happen once per target, so each target gets
      // its own fresh addresses for the success cases.
      for (const testCase of buildCases()) {
        if (target.kind === 'proxy' && (testCase.directOnly || testCase.invalidRequest)) continue;
        if (target.kind !== 'real' && testCase.unlisted) continue;
        const fresh = testCase.status === 201 || (testCase.status === 200 && testCase.method === 'POST');
        const body = fresh && target.kind !== 'mock' ? renameEmails(testCase.body, target.kind) : testCase.body;
        await checkCase(target, { ...testCase, body });
      }
      await checkRateLimit(target);
    }, 120_000);
  }
});

describe('the proxy target can fail', () => {
  it('flags a response that breaks the document', async () => {
    // An upstream that answers /users with an envelope missing its meta, pagination and data.
    const upstream = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"resource":"users"}');
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const proxy = await startPrism({ proxyTo: `http://127.0.0.1:${(upstream.address() as { port: number }).port}` });
    try {
      const response = await fetch(`${proxy.baseUrl}/users`, { headers: { authorization: 'Bearer sk_live_x' } });
      expect(response.headers.get('sl-violations')).toMatch(/meta|pagination|data/);
    } finally {
      await proxy.stop();
      upstream.close();
    }
  }, 120_000);
});

function renameEmails(body: unknown, prefix: string): unknown {
  return JSON.parse(
    JSON.stringify(body).replace(/"([^"@]+)@exemple\.fr"/g, (whole, local) =>
      `${local}@exemple.fr` === learnerEmail ? whole : `"${prefix}.${local}@exemple.fr"`,
    ),
  );
}
