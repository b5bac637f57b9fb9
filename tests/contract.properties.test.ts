import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  addressOfLength,
  BodyValues,
  type BodyViolation,
  type ContractOperation,
  contractOperations,
  fieldLabel,
  type GeneratedRequest,
  generatedRequests,
  type KnownValues,
  type Outcome,
  type TestKeys,
  textValues,
  textViolations,
} from './support/contract-requests';
import { addLearner, addLicences, createKey } from './support/factories';
import { seededOrganisation } from './support/learning-factories';
import { useTestApp } from './support/lifecycle';
import { contractDocument, deref, responseErrors, schemaViolations } from './support/openapi-validator';

/*
 * Requests generated from openapi.yaml for every operation (tests/support/contract-requests.ts),
 * each with what the contract says it must get:
 * - one query parameter, header, path segment or body field beyond its rule (type, format,
 *   pattern, enum, bounds, lengths, item counts, required, unknown field), all else valid and a
 *   working key: 400 whose `error` names it (a path segment beyond its length: 414);
 * - every value within its rules, at its bounds included, and a key of the right scope: a success
 *   of the operation, or the business answer the contract gives for valid input (404 for a
 *   learner unknown here, 400 for an unknown programme slug or an address the server refuses,
 *   409 for enrolment conflicts), judged against the learners and licences of the moment;
 * - keys missing, malformed, revoked, expired (401) or without the scope (403), whatever else;
 * - every other method Node knows: 405 with `Allow`; bodies missing, malformed, of another media
 *   type (415), beyond 1 MiB (413) or exactly at it; URLs at and beyond 8,192 characters (414).
 * Whatever is sent, the answer is never a 5xx, its status is declared by the operation, its body
 * is valid against the contract, and errors have the one shape.
 *
 * Answers that break a rule are gathered, grouped by rule, and reported together at the end (with
 * the request that shows each), so one run names every defect class at once.
 *
 * Defect classes it keeps out: integer query values in other notations (`offset=0x10`, `+16`,
 * `1.6e+1`, `16.0`, ` 16`, `year=2.016e+3`) coerced and answered 200, `If-None-Match` beyond its
 * 1000 characters answered 200, and method `QUERY` without a body answered 400 instead of 405
 * (see `methodNotAllowed` in the support file).
 *
 * Reproduce: PROPERTY_SEED and PROPERTY_RUNS (the seed is printed and in the test's name); the
 * data starts the same, so the same seed sends the same requests in the same order.
 * PROPERTY_DEBUG=1 also prints how many requests of each kind were sent.
 */

const seed = Number(process.env.PROPERTY_SEED ?? 20261124);
const runs = Number(process.env.PROPERTY_RUNS ?? 8000);

const fixture = useTestApp({ rateLimitPerMinute: 1_000_000 });
let orgId: string;
let known: KnownValues;
let keys: TestKeys;
/** The keys as the report names them (never the token itself). */
const keyNames = new Map<string, string>();
let allowedDomains: string[];

/** The contract's rule for an address (enrolment: "même règle que le paramètre email des lectures"). */
const emailRule = deref(contractDocument.components.parameters.email).schema;
/** The contract: an address is trimmed, then lowered, before it is compared or stored. */
const canonical = (email: string) => email.trim().toLowerCase();

/** The organisation's learners as the run goes: the fixture's, then those the run enrols. */
class LearnerDirectory {
  private readonly userIdByEmail = new Map<string, string | null>();
  private readonly userIds = new Set<string>();

  add(email: string, userId: string | null): void {
    this.userIdByEmail.set(canonical(email), userId);
    if (userId) this.userIds.add(userId.toLowerCase());
  }

  isMember(email: string): boolean {
    return this.userIdByEmail.has(canonical(email));
  }

  /** Whom `email` / `user_id` name: nobody asked, a learner of the organisation, or nobody here (404); both must name the same one. */
  resolve(email: string | undefined, userId: string | undefined): 'none' | 'known' | 'unknown' {
    if (email === undefined && userId === undefined) return 'none';
    if (email !== undefined && userId !== undefined)
      return this.userIdByEmail.get(canonical(email)) === userId.toLowerCase() ? 'known' : 'unknown';
    if (email !== undefined) return this.isMember(email) ? 'known' : 'unknown';
    return this.userIds.has(userId!.toLowerCase()) ? 'known' : 'unknown';
  }
}
const directory = new LearnerDirectory();

beforeAll(async () => {
  const { db } = fixture;
  const org = await seededOrganisation(db, { name: 'Formations Propriétés', learners: 25, seed: 8 });
  orgId = org.orgId;
  // Licences to spare: enrolments succeed for about half the run, then the batches have used them up (409).
  await addLicences(db, orgId, 'standard', 500);
  const revoked = await createKey(db, orgId, ['read']);
  await db.updateTable('api_keys').set({ revoked_at: new Date() }).where('id', '=', revoked.id).execute();
  const expired = await createKey(db, orgId, ['read'], '2020-01-01');
  keys = {
    working: [
      { token: org.readKey, scopes: ['read'] },
      { token: org.writeKey, scopes: ['read', 'write'] },
    ],
    refused: [
      { token: revoked.key, name: 'revoked key' },
      { token: expired.key, name: 'expired key' },
    ],
  };
  for (const [token, name] of [
    [org.readKey, 'read key'],
    [org.writeKey, 'write key'],
    [revoked.key, 'revoked key'],
    [expired.key, 'expired key'],
  ])
    keyNames.set(`Bearer ${token}`, name);

  // A learner and a programme exactly at the length bounds of `email` and `programme`, so that a
  // request at the bound can succeed, not only be refused.
  const emailDomain = 'exemple.fr';
  await addLearner(db, orgId, { email: addressOfLength(emailRule.maxLength, emailDomain, 'borne.'), name: null });
  const slugRule = deref(contractDocument.components.parameters.programme).schema;
  const slugAtBound = 'a'.repeat(slugRule.maxLength);
  expect(textViolations(slugRule, slugAtBound)).toEqual([]);
  await db.insertInto('programmes').values({ org_id: orgId, slug: slugAtBound, title: 'Programme au slug le plus long' }).execute();

  const learners = await db
    .selectFrom('memberships as m')
    .innerJoin('accounts as a', 'a.id', 'm.account_id')
    .select(['a.email', 'a.id'])
    .where('m.org_id', '=', orgId)
    .orderBy('a.email')
    .execute();
  for (const learner of learners) directory.add(learner.email, learner.id);
  // Enrolment is limited to the seeded learners' domains and the generator's: other domains are refused (400).
  allowedDomains = [...new Set([...learners.map((learner) => learner.email.split('@')[1]!), emailDomain])];
  await db.updateTable('organisations').set({ allowed_email_domains: allowedDomains }).where('id', '=', orgId).execute();
  const programmes = await db.selectFrom('programmes').select('slug').where('org_id', '=', orgId).orderBy('slug').execute();
  known = {
    learners: learners.map((learner) => ({ email: learner.email, userId: learner.id })),
    programmeSlugs: programmes.map((programme) => programme.slug),
    emailDomain,
  };
}, 120_000);

// ---------------------------------------------------------------------------------------------
// The oracle

type Response = LightMyRequestResponse;

function errorOf(response: Response): string {
  try {
    const body = response.json();
    return typeof body?.error === 'string' ? body.error : '';
  } catch {
    return '';
  }
}

function matches(outcome: Outcome, response: Response): boolean {
  if (response.statusCode !== outcome.status) return false;
  const error = errorOf(response).toLowerCase();
  if (outcome.mentions && !outcome.mentions.some((text) => error.includes(text.toLowerCase()))) return false;
  if (outcome.allow) {
    const allow = String(response.headers.allow ?? '')
      .split(',')
      .map((method) => method.trim())
      .filter(Boolean);
    if ([...allow].sort().join() !== [...outcome.allow].sort().join()) return false;
  }
  return true;
}

function describeOutcome(outcome: Outcome): string {
  if (outcome.mentions) return `${outcome.status} mentioning ${outcome.mentions.join(' or ')}`;
  if (outcome.allow) return `${outcome.status} with Allow: ${outcome.allow.join(', ')}`;
  return String(outcome.status);
}

/** The operations whose description makes a learner mandatory ("`email` ou `user_id` est obligatoire"). */
const learnerRequired = new Set(['getActivityReport']);

/** A valid read: its success (304 for a JSON answer whose tag matches `If-None-Match`), or the business answers of valid input. */
function readOutcomes(operation: ContractOperation, query: Record<string, string>, headers: Record<string, string>): Outcome[] {
  // An operation with no success (GET /{resource}): its only answer to a valid request is its 404.
  if (operation.successStatuses.length === 0) return [{ status: 404 }];
  const outcomes: Outcome[] = [];
  if (query.programme !== undefined && !known.programmeSlugs.includes(query.programme)) {
    // Unknown slug: 400 naming `programme`, or ignored by the resources without programmes.
    outcomes.push({ status: 400, mentions: ['« programme »'] });
  }
  const learner = directory.resolve(query.email, query.user_id);
  if (learner === 'none' && learnerRequired.has(operation.operationId)) return [{ status: 400, mentions: ['« email »', '« user_id »'] }];
  if (learner === 'unknown') return [...outcomes, { status: 404 }];
  // A file (`format=csv`, `format=xlsx`) has no tag to match: only JSON answers 304.
  const json = operation.answerMediaTypes.includes('application/json') && (query.format ?? 'json') === 'json';
  const tag = Object.entries(headers).find(([name]) => name.toLowerCase() === 'if-none-match')?.[1];
  const matchesAnyTag = tag?.split(',').some((candidate) => candidate.trim() === '*') ?? false;
  return [...outcomes, { status: json && matchesAnyTag ? 304 : 200 }];
}

type EnrolmentRow = { email: string; programme_slugs?: string[] };

async function licencesAvailable(): Promise<number> {
  const row = await fixture.db
    .selectFrom('licences')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .where('org_id', '=', orgId)
    .where('status', '=', 'disponible')
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

/** Why the server refuses an address of a valid body: not an address once trimmed and lowered, or a domain not allowed. */
function addressRefusal(email: string): 'invalid' | 'domain' | null {
  const address = canonical(email);
  if (schemaViolations(emailRule, address).length > 0) return 'invalid';
  return allowedDomains.includes(address.slice(address.lastIndexOf('@') + 1)) ? null : 'domain';
}

/**
 * A valid enrolment body: what the contract answers given who is already a member and how many
 * licences are left, then the answer's own consistency; the directory learns who was enrolled.
 */
async function judgeEnrolment(body: any, response: Response): Promise<{ outcomes: Outcome[]; problems: string[] }> {
  const batch = Array.isArray(body.users);
  const rows: EnrolmentRow[] = batch ? body.users : [body];
  const problems: string[] = [];
  const unknownSlug = rows.flatMap((row) => row.programme_slugs ?? []).find((slug) => !known.programmeSlugs.includes(slug));
  if (unknownSlug !== undefined) return { outcomes: [{ status: 400, mentions: ['programme_slugs'] }], problems };
  const refusals = rows.map((row) => addressRefusal(row.email));
  const status = response.statusCode;

  if (!batch) {
    const email = canonical(body.email);
    if (refusals[0]) return { outcomes: [{ status: 400, mentions: [`« ${email} »`] }], problems };
    if (directory.isMember(email)) return { outcomes: [{ status: 409 }], problems };
    if (status === 409 && (await licencesAvailable()) > 0) problems.push('409 for a new learner while licences are available');
    if (status === 201) {
      const member = response.json().member;
      if (member.email !== email) problems.push('201 whose member.email is not the trimmed, lowered address');
      directory.add(member.email, member.user_id);
    }
    return { outcomes: [{ status: 201 }, { status: 409 }], problems };
  }

  const firstRefused = refusals.findIndex((refusal) => refusal !== null);
  if (body.atomic === true && firstRefused >= 0) return { outcomes: [{ status: 400, mentions: [`users[${firstRefused}]`] }], problems };
  const newcomers = new Set(rows.map((row) => canonical(row.email)).filter((email) => !directory.isMember(email)));
  if (status === 409 && body.atomic === true && (await licencesAvailable()) >= newcomers.size)
    problems.push('atomic 409 while licences suffice');
  if (status === 200) {
    const results: { email: string; status?: string; member_id: string | null }[] = response.json().results;
    if (results.length !== rows.length) problems.push('batch answer with another number of results than entries');
    const seen = new Set<string>();
    rows.forEach((row, index) => {
      const email = canonical(row.email);
      const result = results[index];
      if (result?.email !== email) problems.push('batch result whose email is not its entry’s, trimmed and lowered');
      const mustFail = refusals[index] !== null || directory.isMember(email) || seen.has(email);
      if (mustFail && result?.status !== undefined) problems.push('batch entry enrolled although refused, a member, or repeated');
      seen.add(email);
    });
    results.forEach((result) => {
      if (result.status !== undefined) directory.add(result.email, null);
    });
  }
  return { outcomes: body.atomic === true ? [{ status: 200 }, { status: 409 }] : [{ status: 200 }], problems };
}

/** What holds for every answer, whatever was sent. */
function contractInvariants(request: GeneratedRequest, response: Response): string[] {
  const problems: string[] = [];
  const { operation } = request;
  const status = response.statusCode;
  if (status >= 500) problems.push(`a ${status}`);
  if (!operation.statuses.includes(String(status))) problems.push(`status ${status} not declared by ${operation.operationId}`);
  if (status === 405 && !response.headers.allow) problems.push('405 without Allow');
  if (status === 304 || request.method === 'HEAD') {
    if (response.body !== '') problems.push(`a body on a ${request.method === 'HEAD' ? 'HEAD' : '304'}`);
    return problems;
  }
  const type = String(response.headers['content-type'] ?? '');
  if (status === 200 && !operation.answerMediaTypes.some((declared) => type.startsWith(declared)))
    problems.push(`200 as ${type}, not declared`);
  if (type.startsWith('application/json')) {
    const body = response.json();
    const errors = operation.statuses.includes(String(status)) ? responseErrors(operation.path, operation.method, status, body) : [];
    if (errors.length > 0) problems.push(`body not valid against the contract (${errors.slice(0, 2).join('; ')})`);
    if (
      status >= 400 &&
      (typeof body.error !== 'string' ||
        typeof body.code !== 'string' ||
        body.doc_url !== `http://localhost/v1/docs/errors#${body.code}` ||
        Object.keys(body).some((key) => !['error', 'code', 'param', 'doc_url', 'available', 'retry_after'].includes(key)))
    )
      problems.push('error not in the one shape');
  } else if (type.startsWith('text/csv')) {
    if (response.rawPayload.subarray(0, 3).toString('hex') !== 'efbbbf') problems.push('CSV without its BOM');
  } else if (type.startsWith('application/vnd.openxmlformats-officedocument.spreadsheetml.sheet')) {
    // A workbook is a zip archive.
    if (response.rawPayload.subarray(0, 4).toString('hex') !== '504b0304') problems.push('xlsx that is not a zip archive');
  } else if (type.startsWith('application/pdf')) {
    if (response.rawPayload.subarray(0, 5).toString('latin1') !== '%PDF-') problems.push('PDF that is not one');
  } else {
    problems.push(`answer as ${type || 'no content type'}`);
  }
  return problems;
}

/** Everything wrong with one answer: its invariants, then the answer the contract gives this request. */
async function judge(request: GeneratedRequest, response: Response): Promise<string[]> {
  const problems = contractInvariants(request, response);
  const expect = request.expect;
  let outcomes: Outcome[];
  if (expect.kind === 'answer') {
    outcomes = expect.outcomes;
  } else if (request.operation.body) {
    const enrolment = await judgeEnrolment(expect.body, response);
    outcomes = enrolment.outcomes;
    problems.push(...enrolment.problems);
  } else {
    outcomes = readOutcomes(request.operation, expect.query, expect.headers);
  }
  if (!outcomes.some((outcome) => matches(outcome, response))) problems.push(`expected ${outcomes.map(describeOutcome).join(' | ')}`);
  return problems;
}

/** Answers that break the contract, grouped by what was tried and what broke: the statuses answered, and two exchanges that show it. */
class Findings {
  private readonly groups = new Map<string, { answered: Map<number, number>; examples: string[] }>();

  record(group: string, request: GeneratedRequest, response: Response): void {
    const entry = this.groups.get(group) ?? { answered: new Map<number, number>(), examples: [] };
    entry.answered.set(response.statusCode, (entry.answered.get(response.statusCode) ?? 0) + 1);
    if (entry.examples.length < 2) entry.examples.push(describeExchange(request, response));
    this.groups.set(group, entry);
  }

  report(): string[] {
    return [...this.groups]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([group, { answered, examples }]) => {
        const total = [...answered.values()].reduce((sum, count) => sum + count, 0);
        const statuses = [...answered].map(([status, count]) => `${status} ×${count}`).join(', ');
        return `${total}× ${group} (answered ${statuses})\n      e.g. ${examples.join('\n      e.g. ')}`;
      });
  }
}

/** One request and its answer, short enough to read, with the key named (never shown). */
function describeExchange(request: GeneratedRequest, response: Response): string {
  const { authorization, ...headers } = request.headers;
  const key = authorization === undefined ? 'no key' : (keyNames.get(authorization) ?? JSON.stringify(authorization.slice(0, 30)));
  const clip = (text: string, length: number) => (text.length > length ? `${text.slice(0, length)}… (${text.length} chars)` : text);
  const payload = request.payload === undefined ? '' : ` body ${clip(request.payload, 160)}`;
  return `${request.method} ${clip(request.url, 200)} [${key}] ${JSON.stringify(headers, (_key, value) => (typeof value === 'string' ? clip(value, 60) : value))}${payload} → ${response.statusCode} ${clip(response.body, 200)}`;
}

// ---------------------------------------------------------------------------------------------

/** The rules a schema states, that some generated value must break (a text is always a string: no `type` to break there). */
function statedRules(schema: Record<string, any>, isText: boolean): string[] {
  const keywords = ['format', 'pattern', 'enum', 'minimum', 'maximum', 'minLength', 'maxLength', 'minItems', 'maxItems'];
  const stated = keywords.filter((keyword) => schema[keyword] !== undefined && !(keyword === 'minLength' && schema.minLength === 0));
  return !isText || schema.type !== 'string' ? ['type', ...stated] : stated;
}

/** Every (field, rule) of a body schema: its stated rules, a wrong type below the root, each required field, unknown fields where closed. */
function bodyRules(node: Record<string, any>, path = ''): string[] {
  const schema = deref(node);
  if (schema.oneOf) return [...new Set(schema.oneOf.flatMap((branch: any) => bodyRules(branch, path)))] as string[];
  const join = (key: string) => (path ? `${path}.${key}` : key);
  const rules = statedRules(schema, false)
    .filter((rule) => path !== '' || rule !== 'type')
    .map((rule) => `${path}: ${rule}`);
  if (schema.type === 'object') {
    rules.push(...(schema.required ?? []).map((key: string) => `${join(key)}: required`));
    if (schema.additionalProperties === false) rules.push(`${join('*')}: additionalProperties`);
    for (const [key, property] of Object.entries<any>(schema.properties ?? {})) rules.push(...bodyRules(property, join(key)));
  }
  if (schema.type === 'array') rules.push(...bodyRules(schema.items, `${path}[]`));
  return rules;
}

describe('requests generated from openapi.yaml', () => {
  it('generators: every rule of every parameter, header and body field is broken by some value, and valid values are valid', () => {
    const missing: string[] = [];
    for (const operation of contractOperations) {
      for (const slot of operation.parameters) {
        const values = textValues(slot.location, slot.name, slot.schema, known);
        for (const rule of statedRules(slot.schema, true))
          if (!values.invalidRules.has(rule)) missing.push(`${operation.operationId} ${slot.location} ${slot.name}: ${rule}`);
        for (const text of fc.sample(values.valid, { numRuns: 200, seed }))
          expect(textViolations(slot.schema, text), `${slot.name} = ${JSON.stringify(text)}`).toEqual([]);
      }
      if (!operation.body) continue;
      const bodies = new BodyValues(known);
      for (const value of fc.sample(bodies.valid(operation.body.schema), { numRuns: 300, seed }))
        expect(schemaViolations(operation.body.schema, value), JSON.stringify(value).slice(0, 300)).toEqual([]);
      const violations: BodyViolation[] = fc.sample(bodies.violations(operation.body.schema), { numRuns: 4000, seed });
      const covered = new Set(violations.flatMap((violation) => violation.rules.map((rule) => `${fieldLabel(violation)}: ${rule}`)));
      for (const rule of bodyRules(operation.body.schema)) if (!covered.has(rule)) missing.push(`${operation.operationId} body ${rule}`);
      for (const violation of violations)
        expect(schemaViolations(operation.body.schema, violation.value), `${violation.field}: ${violation.rules}`).not.toEqual([]);
    }
    expect(missing, 'rules no generated value breaks').toEqual([]);
  });

  it(`get the answer the contract gives them (${runs} requests, seed ${seed})`, async () => {
    const requests = generatedRequests(known, keys);
    const statuses = new Map<number, number>();
    const tried = new Map<string, number>();
    const classes = new Map<string, number>();
    const brokenRules = new Set<string>();
    const findings = new Findings();
    const started = performance.now();
    await fc.assert(
      fc.asyncProperty(requests, async (request) => {
        const response = await fixture.app.inject({
          method: request.method as 'GET',
          url: request.url,
          headers: request.headers,
          ...(request.payload === undefined ? {} : { payload: request.payload }),
        });
        statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
        classes.set(request.requestClass, (classes.get(request.requestClass) ?? 0) + 1);
        const triedLabel = `${request.requestClass} · ${request.label}`;
        tried.set(triedLabel, (tried.get(triedLabel) ?? 0) + 1);
        for (const rule of request.broken?.rules ?? []) brokenRules.add(`${request.broken!.input}: ${rule}`);
        for (const problem of await judge(request, response)) findings.record(`${triedLabel} · ${problem}`, request, response);
      }),
      { numRuns: runs, seed, endOnFailure: true },
    );
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    if (process.env.PROPERTY_DEBUG)
      console.log(
        [...tried]
          .sort()
          .map(([label, count]) => `${count} ${label}`)
          .join('\n'),
      );
    console.log(
      `contract properties: ${runs} requests in ${seconds} s, seed ${seed} (PROPERTY_SEED, PROPERTY_RUNS); statuses ${JSON.stringify(Object.fromEntries([...statuses].sort(([a], [b]) => a - b)))}; ${JSON.stringify(Object.fromEntries(classes))}`,
    );

    expect(findings.report(), `answers that break the contract (seed ${seed})`).toEqual([]);

    // The run reaches what matters: successes, and each kind of refusal.
    for (const status of [200, 201, 304, 400, 401, 403, 404, 405, 409, 413, 414, 415])
      expect(statuses.get(status) ?? 0, `answers ${status}`).toBeGreaterThan(0);
    // Every rule of every parameter, header and body field was broken at least once over HTTP.
    const unsent = contractOperations.flatMap((operation) => [
      ...operation.parameters.flatMap((slot) => statedRules(slot.schema, true).map((rule) => `${slot.location} ${slot.name}: ${rule}`)),
      ...(operation.body ? bodyRules(operation.body.schema).map((rule) => `body ${rule}`) : []),
    ]);
    expect(
      [...new Set(unsent)].filter((rule) => !brokenRules.has(rule)),
      'rules never broken over HTTP',
    ).toEqual([]);
  }, 300_000);
});
