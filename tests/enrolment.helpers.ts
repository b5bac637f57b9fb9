import { sql } from 'kysely';
import { expect } from 'vitest';
import type { DB } from '../db/connection';
import { errorStatus } from '../src/http/errors';
import { anErrorBody, bearer } from './support/app';
import { addLicences, createOrgWithKeys } from './support/factories';
import type { AppFixture } from './support/lifecycle';
import { responseErrors } from './support/openapi-validator';

/** Everything an enrolment may write, counted: a refused request must leave it unchanged. */
export async function writtenState(db: DB, orgId: string) {
  const {
    rows: [counts],
  } = await sql<Record<string, number>>`
    select
      (select count(*)::int from accounts) as accounts,
      (select count(*)::int from memberships where org_id = ${orgId}) as memberships,
      (select count(*)::int from licences where org_id = ${orgId} and status = 'disponible') as licences_disponibles,
      (select count(*)::int from licences where org_id = ${orgId} and status = 'attribuée') as licences_attribuees,
      (select count(*)::int from programme_enrolments where org_id = ${orgId}) as programme_enrolments,
      (select count(*)::int from events where org_id = ${orgId}) as events`.execute(db);
  return counts!;
}

/**
 * The invariants no interleaving may break: every learner of the organisation holds exactly one
 * live licence, every live licence belongs to one of its learners, one `learner.enrolled` event per
 * learner, and no account was left behind without a membership by a failed enrolment.
 */
export async function licenceInvariants(db: DB, orgId: string, emails: string[]) {
  const {
    rows: [row],
  } = await sql<Record<string, number>>`
    select
      (select count(*)::int from memberships m where m.org_id = ${orgId}
        and (select count(*) from licences l where l.membership_id = m.id and l.status in ('attribuée', 'activée')) <> 1) as members_without_one_licence,
      (select count(*)::int from licences l where l.org_id = ${orgId} and l.status in ('attribuée', 'activée')
        and not exists (select 1 from memberships m where m.id = l.membership_id and m.org_id = ${orgId})) as stray_licences,
      (select count(*)::int from memberships where org_id = ${orgId}) as members,
      (select count(*)::int from licences where org_id = ${orgId} and status = 'attribuée') as licences_attribuees,
      (select count(*)::int from events where org_id = ${orgId} and type = 'learner.enrolled') as enrolled_events,
      (select count(*)::int from accounts a where a.email = any(${emails}::text[])
        and not exists (select 1 from memberships m where m.account_id = a.id)) as orphan_accounts`.execute(db);
  return row!;
}

export const learnerEmails = (prefix: string, count: number, domain = 'exemple.fr') =>
  Array.from({ length: count }, (_, index) => `${prefix}${String(index).padStart(3, '0')}@${domain}`);

export type Org = Awaited<ReturnType<typeof createOrgWithKeys>>;

/**
 * What the enrolment tests share, bound to their file's database and server: organisations with
 * licences, POST /users checked against openapi.yaml, and refusals that must write nothing.
 */
export function enrolmentHarness(fixture: AppFixture) {
  async function newOrg(licences: { standard?: number; tutorat?: number } = { standard: 5 }, domains: string[] = []): Promise<Org> {
    const { db } = fixture;
    const org = await createOrgWithKeys(db, { domains });
    if (licences.standard) await addLicences(db, org.orgId, 'standard', licences.standard);
    if (licences.tutorat) await addLicences(db, org.orgId, 'tutorat', licences.tutorat);
    return org;
  }

  /** POST /users through the real server; every answer must match what openapi.yaml documents for it. */
  async function enrol(org: Org, payload: unknown, key = org.writeKey) {
    const response = await fixture.app.inject({ method: 'POST', url: '/v1/users', headers: bearer(key), payload: payload as never });
    expect(responseErrors('/users', 'POST', response.statusCode, response.json())).toEqual([]);
    return response;
  }

  /** Sends a request that must be refused with `status`, and checks that it wrote nothing at all. */
  async function expectRefused(org: Org, payload: unknown, status: number, message: RegExp, key = org.writeKey) {
    const before = await writtenState(fixture.db, org.orgId);
    const response = await enrol(org, payload, key);
    expect(response.statusCode).toBe(status);
    expect(response.json()).toEqual(anErrorBody(expect.stringMatching(message)));
    expect(errorStatus(response.json().code)).toBe(status);
    expect(await writtenState(fixture.db, org.orgId)).toEqual(before);
    return response.json() as { code: string; param?: string };
  }

  return { newOrg, enrol, expectRefused };
}
