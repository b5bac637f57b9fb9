import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadOpenapiDocument } from '../src/openapi-document';
import { addLicences, createKey } from './support/factories';
import { client, seededOrganisation } from './support/learning-factories';
import { useTestApp } from './support/lifecycle';
import { responseErrors } from './support/openapi-validator';

// Requests generated from openapi.yaml itself, for every operation: each parameter and body field
// valid, at its bounds, beyond them, of the wrong type, or absent; keys valid, read-only, revoked,
// malformed or missing. Whatever is sent, the server answers a status the operation declares,
// never a 5xx, with a body that is valid against the contract, and errors in the one shape.

const document = loadOpenapiDocument();
const runs = Number(process.env.PROPERTY_RUNS ?? 1500);

const fixture = useTestApp({ rateLimitPerMinute: 1_000_000 });
let keys: Record<'read' | 'write' | 'revoked', string>;
let known: { emails: string[]; userIds: string[]; slugs: string[] };

beforeAll(async () => {
  const org = await seededOrganisation(fixture.db, { name: 'Formations Propriétés', learners: 25, seed: 8 });
  // Licences to spare, so that enrolments succeed until the batches use them up.
  await addLicences(fixture.db, org.orgId, 'standard', 300);
  const revoked = await createKey(fixture.db, org.orgId, ['read']);
  await fixture.db.updateTable('api_keys').set({ revoked_at: new Date() }).where('id', '=', revoked.id).execute();
  keys = { read: org.readKey, write: org.writeKey, revoked: revoked.key };
  const users = await client(fixture.app, org.readKey).all('users');
  const userIds = await fixture.db
    .selectFrom('memberships as m')
    .innerJoin('accounts as a', 'a.id', 'm.account_id')
    .select('a.id')
    .where('m.org_id', '=', org.orgId)
    .execute();
  known = { emails: users.map((user) => user.email as string), userIds: userIds.map((row) => row.id), slugs: org.seeded.programmes };
}, 120_000);

function deref(node: any): any {
  while (node && typeof node === 'object' && typeof node.$ref === 'string') {
    node = node.$ref
      .replace(/^#\//, '')
      .split('/')
      .reduce((at: any, part: string) => at[part], document);
  }
  return node;
}

/** Text that breaks things: empty, huge, control characters, quotes, SQL, non-BMP, percent signs. */
const hostileText = fc.constantFrom(
  '',
  ' ',
  'a'.repeat(300),
  'x'.repeat(5000),
  '\u0000',
  "'; drop table accounts; --",
  '"',
  '%',
  '%ff',
  '😀',
  'Ñandú',
  '../..',
  '1e400',
  '-1',
  'null',
  'true',
  '[]',
  '{}',
);

/** Values for one query parameter, from its schema: those it allows (bounds included), and others. */
function parameterValues(name: string, schema: any): { valid: fc.Arbitrary<string>; invalid: fc.Arbitrary<string> } {
  if (schema.type === 'integer') {
    const [minimum, maximum] = [schema.minimum ?? -1000, schema.maximum ?? 10_000_000];
    return {
      valid: fc.oneof(
        fc.integer({ min: minimum, max: Math.min(maximum, minimum + 3000) }).map(String),
        fc.constantFrom(String(minimum), String(maximum)),
      ),
      invalid: fc.oneof(
        fc.constantFrom(
          String(minimum - 1),
          String(maximum + 1),
          '1.5',
          '1e400',
          'Infinity',
          '-Infinity',
          'NaN',
          '0x10',
          '99999999999999999999',
          '-99999999999999999999',
        ),
        hostileText,
      ),
    };
  }
  if (schema.enum)
    return { valid: fc.constantFrom(...schema.enum.map(String)), invalid: fc.oneof(hostileText, fc.constantFrom('JSON', 'xlsx', 'pdf')) };
  switch (schema.format ?? name) {
    case 'date':
      return {
        valid: fc.oneof(
          fc
            .date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-12-31T00:00:00Z'), noInvalidDate: true })
            .map((d) => d.toISOString().slice(0, 10)),
          fc.constantFrom('2000-01-01', '2100-12-31', '2025-12-31', '2026-01-01'),
        ),
        invalid: fc.oneof(
          fc.constantFrom(
            '0000-01-01',
            '1999-12-31',
            '2101-01-01',
            '2026-02-30',
            '2026-13-01',
            '2026-1-1',
            '20260101',
            '2026-01-01T00:00:00Z',
          ),
          hostileText,
        ),
      };
    case 'email':
      return {
        valid: fc.oneof(
          { weight: 4, arbitrary: fc.constantFrom(...known.emails) },
          { weight: 1, arbitrary: fc.emailAddress().filter((address) => address.length <= 254) },
        ),
        invalid: fc.oneof(fc.constantFrom(`${'a'.repeat(250)}@exemple.fr`, 'pas-une-adresse', 'A@B'), hostileText),
      };
    case 'uuid':
      return {
        valid: fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...known.userIds) }, { weight: 1, arbitrary: fc.uuid() }),
        invalid: fc.oneof(fc.constantFrom('123', `${known.userIds[0]}0`), hostileText),
      };
    default:
      return {
        valid: fc.oneof(
          { weight: 4, arbitrary: fc.constantFrom(...known.slugs) },
          { weight: 1, arbitrary: fc.stringMatching(/^[a-z0-9]{1,8}(-[a-z0-9]{1,8}){0,2}$/) },
        ),
        invalid: fc.oneof(fc.constantFrom('Pas_Un_Slug', 'a'.repeat(101), '-debut', 'fin-'), hostileText),
      };
  }
}

/** A body for POST /users: one learner or a batch, mostly well formed, sometimes beyond bounds or wrong. */
function enrolmentBody(): fc.Arbitrary<unknown> {
  const goodEmail = fc.tuple(fc.stringMatching(/^[a-z]{1,10}$/), fc.nat(1_000_000)).map(([name, n]) => `${name}.${n}@exemple.fr`);
  const email = fc.oneof(
    { weight: 6, arbitrary: goodEmail },
    { weight: 1, arbitrary: fc.constantFrom(...known.emails) },
    {
      weight: 1,
      arbitrary: fc.oneof(
        fc.emailAddress(),
        fc.constantFrom(`${'b'.repeat(330)}@exemple.fr`, 'pas-une-adresse', '  Majuscules@Exemple.FR '),
        hostileText,
        fc.integer(),
      ),
    },
  );
  const slugs = fc.oneof(
    { weight: 6, arbitrary: fc.array(fc.constantFrom(...known.slugs), { maxLength: 3 }) },
    {
      weight: 1,
      arbitrary: fc.oneof(
        fc.array(fc.constantFrom('inconnu', 'Pas_Un_Slug'), { minLength: 1, maxLength: 2 }),
        fc.constant(Array.from({ length: 101 }, (_, i) => `p${i}`)),
        fc.constant('pas-un-tableau'),
      ),
    },
  );
  const one = fc.oneof(
    { weight: 8, arbitrary: fc.record({ email, programme_slugs: slugs }, { requiredKeys: ['email'] }) },
    { weight: 1, arbitrary: fc.record({ email, programme_slugs: slugs, extra: fc.string() }, { requiredKeys: [] }) },
  );
  return fc.oneof(
    { weight: 5, arbitrary: one },
    {
      weight: 3,
      arbitrary: fc.record(
        {
          users: fc.oneof(
            { weight: 5, arbitrary: fc.array(one, { minLength: 1, maxLength: 4 }) },
            {
              weight: 1,
              arbitrary: fc.constantFrom(
                [],
                Array.from({ length: 51 }, (_, i) => ({ email: `lot${i}@exemple.fr` })),
              ),
            },
          ),
          atomic: fc.oneof({ weight: 5, arbitrary: fc.boolean() }, { weight: 1, arbitrary: fc.constant('oui') }),
        },
        { requiredKeys: ['users'] },
      ),
    },
    { weight: 1, arbitrary: fc.constantFrom(null, [], 'texte', 42, { users: null }) },
  );
}

interface GeneratedRequest {
  method: 'GET' | 'POST';
  url: string;
  path: string;
  headers: Record<string, string>;
  payload?: string;
}

/**
 * Requests of one operation. Most are valid but for at most one parameter (the answers must then
 * be successes, 404s of unknown learners, or a 400 naming that parameter); some are chaos.
 */
function requestsFor(path: string, method: string, operation: any): fc.Arbitrary<GeneratedRequest> {
  const query = (operation.parameters ?? []).map(deref).filter((p: any) => p.in === 'query');
  const values = Object.fromEntries(query.map((p: any) => [p.name, parameterValues(p.name, deref(p.schema))]));
  // Valid requests name a learner by email or by user_id, rarely both (both must be the same learner).
  const valid = fc
    .tuple(fc.record(Object.fromEntries(Object.entries(values).map(([name, v]) => [name, v.valid])), { requiredKeys: [] }), fc.nat(9))
    .map(([chosen, dice]) => {
      const record = { ...chosen } as Record<string, string>;
      if (record.email !== undefined && record.user_id !== undefined && dice > 0) delete record[dice % 2 ? 'email' : 'user_id'];
      return record;
    });
  const oneInvalid =
    query.length === 0
      ? valid
      : fc
          .tuple(valid, fc.constantFrom(...query.map((p: any) => p.name as string)))
          .chain(([chosen, name]) => values[name]!.invalid.map((bad: string) => ({ ...chosen, [name]: bad })));
  const chaos = fc.record(Object.fromEntries(Object.entries(values).map(([name, v]) => [name, fc.oneof(v.valid, v.invalid)])), {
    requiredKeys: [],
  });
  const queryArbitrary = fc.oneof({ weight: 6, arbitrary: valid }, { weight: 3, arbitrary: oneInvalid }, { weight: 1, arbitrary: chaos });
  const resource = fc.oneof(
    fc.constantFrom('apprenants', 'cours', 'learner', 'USERS'),
    fc.string({ minLength: 1, maxLength: 20 }).filter((s) => !/[/?#%]/.test(s)),
    fc.constant('r'.repeat(120)),
  );
  const key =
    method === 'post'
      ? fc.constantFrom<'read' | 'write' | 'revoked' | 'none' | 'malformed'>('write', 'write', 'write', 'write', 'read', 'none')
      : fc.oneof(
          { weight: 8, arbitrary: fc.constantFrom<'read' | 'write'>('read', 'write') },
          { weight: 1, arbitrary: fc.constantFrom<'revoked' | 'none' | 'malformed'>('revoked', 'none', 'malformed') },
        );
  const ifNoneMatch = fc.option(fc.oneof(fc.constant('W/"x"'), fc.constant('*'), fc.constant('y'.repeat(1200))), {
    nil: undefined,
    freq: 4,
  });
  const contentType = fc.constantFrom(
    'application/json',
    'application/json',
    'application/json',
    'application/json',
    'text/plain',
    'application/xml',
    undefined,
  );
  return fc
    .record({
      values: queryArbitrary,
      resource,
      key,
      ifNoneMatch,
      body: method === 'post' ? enrolmentBody() : fc.constant(undefined),
      contentType,
    })
    .map((generated) => {
      const search = new URLSearchParams(generated.values as Record<string, string>).toString();
      const concrete = path.replace('{resource}', encodeURIComponent(generated.resource));
      const headers: Record<string, string> = {};
      const token = { read: keys.read, write: keys.write, revoked: keys.revoked, none: null, malformed: 'Basic abc' }[generated.key];
      if (token) headers.authorization = token.startsWith('sk_live_') ? `Bearer ${token}` : token;
      if (generated.ifNoneMatch) headers['if-none-match'] = generated.ifNoneMatch;
      let payload: string | undefined;
      if (method === 'post' && generated.body !== undefined) {
        payload = JSON.stringify(generated.body);
        if (generated.contentType) headers['content-type'] = generated.contentType;
      }
      return { method: method.toUpperCase() as 'GET' | 'POST', url: `/v1${concrete}${search ? `?${search}` : ''}`, path, headers, payload };
    });
}

const operations = Object.entries<any>(document.paths).flatMap(([path, item]) =>
  ['get', 'post'].filter((method) => item[method]).map((method) => ({ path, method, operation: item[method] })),
);

describe('requests generated from openapi.yaml', () => {
  it(`get a declared status, never a 5xx, a body valid against the contract, errors in one shape (${runs} requests)`, async () => {
    const statuses = new Map<string, number>();
    const all = fc.oneof(...operations.map(({ path, method, operation }) => requestsFor(path, method, operation)));
    await fc.assert(
      fc.asyncProperty(all, async (request) => {
        const response = await fixture.app.inject({
          method: request.method,
          url: request.url,
          headers: request.headers,
          ...(request.payload === undefined ? {} : { payload: request.payload }),
        });
        const label = `${request.method} ${request.url} ${JSON.stringify(request.headers)} ${request.payload?.slice(0, 200) ?? ''} → ${response.statusCode} ${response.body.slice(0, 300)}`;
        statuses.set(String(response.statusCode), (statuses.get(String(response.statusCode)) ?? 0) + 1);
        expect(response.statusCode, label).toBeLessThan(500);
        const declared = Object.keys(document.paths[request.path][request.method.toLowerCase()].responses);
        expect(declared, label).toContain(String(response.statusCode));
        const type = String(response.headers['content-type'] ?? '');
        if (response.statusCode === 304) return;
        if (type.startsWith('application/json')) {
          const body = response.json();
          expect(responseErrors(request.path, request.method, response.statusCode, body), label).toEqual([]);
          if (response.statusCode >= 400) {
            expect(typeof body.error, label).toBe('string');
            expect(
              Object.keys(body).every((k) => ['error', 'available', 'retry_after'].includes(k)),
              label,
            ).toBe(true);
          }
        } else if (type.startsWith('text/csv')) {
          expect(response.rawPayload.subarray(0, 3).toString('hex'), label).toBe('efbbbf');
        } else {
          expect(type, label).toBe('application/pdf');
          expect(response.rawPayload.subarray(0, 5).toString('latin1'), label).toBe('%PDF-');
        }
      }),
      { numRuns: runs, seed: Number(process.env.PROPERTY_SEED ?? 20261124), endOnFailure: true },
    );
    // The generator reaches the answers that matter: successes, refusals of each kind.
    for (const status of ['200', '201', '304', '400', '401', '403', '404', '409', '414', '415'])
      expect(statuses.get(status) ?? 0, `${status} : ${JSON.stringify([...statuses])}`).toBeGreaterThan(0);
  }, 600_000);
});
