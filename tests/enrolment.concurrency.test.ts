import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { takeAtomicPickingTurn } from '../db/enrolment';
import { learnerEmails, licenceInvariants } from './enrolment.helpers';
import { addLicences, createOrgWithKeys } from './support/factories';
import { useTestDatabase } from './support/lifecycle';
import { type ServerProcess, startServerProcesses } from './support/server-process';

// Real parallel HTTP requests, spread over two server processes on one database: whatever keeps
// licences honest must hold across processes, so it can only be the database.
const database = useTestDatabase();
let servers: ServerProcess[] = [];

beforeAll(async () => {
  servers = await startServerProcesses(2, database.url, { RATE_LIMIT_PER_MINUTE: '1000000' });
}, 60_000);
afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
});

const rounds = 3;

async function post(server: number, key: string, payload: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${servers[server % servers.length]!.baseUrl}/users`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(payload),
  });
  return { status: response.status, body: await response.json() };
}

async function newOrg(standard: number, tutorat = 0) {
  const org = await createOrgWithKeys(database.db);
  await addLicences(database.db, org.orgId, 'standard', standard);
  if (tutorat) await addLicences(database.db, org.orgId, 'tutorat', tutorat);
  return org;
}

const countBy = <T>(values: T[]) => values.reduce((counts, value) => counts.set(value, (counts.get(value) ?? 0) + 1), new Map<T, number>());

describe('concurrent enrolments', () => {
  it('200 distinct learners at once against 50 licences: exactly 50 enrolled, 150 refused with 409', async () => {
    for (let round = 0; round < rounds; round += 1) {
      const org = await newOrg(30, 20);
      const emails = learnerEmails(`r${round}-distinct`, 200);
      const responses = await Promise.all(emails.map((email, index) => post(index, org.writeKey, { email })));
      expect(countBy(responses.map((r) => r.status))).toEqual(
        new Map([
          [201, 50],
          [409, 150],
        ]),
      );
      expect(responses.filter((r) => r.status === 409).every((r) => /Aucune licence disponible/.test(r.body.error))).toBe(true);
      const licenceIds = new Set(responses.filter((r) => r.status === 201).map((r) => r.body.member.id));
      expect(licenceIds.size).toBe(50);
      expect(await licenceInvariants(database.db, org.orgId, emails)).toEqual({
        members_without_one_licence: 0,
        stray_licences: 0,
        members: 50,
        licences_attribuees: 50,
        enrolled_events: 50,
        orphan_accounts: 0,
      });
      const accounts = await database.db.selectFrom('accounts').select('id').where('email', 'in', emails).execute();
      expect(accounts).toHaveLength(50);
    }
  }, 120_000);

  it('the same learner 20 times at once, in any spelling: enrolled once, 19 times already a member', async () => {
    for (let round = 0; round < rounds; round += 1) {
      const org = await newOrg(25);
      const email = `r${round}-meme@exemple.fr`;
      const spellings = Array.from({ length: 20 }, (_, index) => (index % 3 === 0 ? ` ${email.toUpperCase()} ` : email));
      const responses = await Promise.all(spellings.map((spelling, index) => post(index, org.writeKey, { email: spelling })));
      expect(countBy(responses.map((r) => r.status))).toEqual(
        new Map([
          [201, 1],
          [409, 19],
        ]),
      );
      expect(responses.filter((r) => r.status === 409).every((r) => /déjà membre/.test(r.body.error))).toBe(true);
      expect(await licenceInvariants(database.db, org.orgId, [email])).toEqual({
        members_without_one_licence: 0,
        stray_licences: 0,
        members: 1,
        licences_attribuees: 1,
        enrolled_events: 1,
        orphan_accounts: 0,
      });
      expect(await database.db.selectFrom('accounts').select('id').where('email', '=', email).execute()).toHaveLength(1);
    }
  }, 120_000);

  it('two overlapping batches at once never assign a licence twice, with licences to spare or short', async () => {
    for (let round = 0; round < rounds; round += 1) {
      for (const licences of [100, 45]) {
        const org = await newOrg(licences);
        const emails = learnerEmails(`r${round}-l${licences}-lot`, 60);
        // 20 learners in both batches, in opposite orders, to tempt lock-order deadlocks too.
        const first = emails.slice(0, 40);
        const second = emails.slice(20).reverse();
        const [a, b] = await Promise.all([
          post(0, org.writeKey, { users: first.map((email) => ({ email })) }),
          post(1, org.writeKey, { users: second.map((email) => ({ email })) }),
        ]);
        expect([a.status, b.status]).toEqual([200, 200]);
        const enrolled = [...a.body.results, ...b.body.results]
          .filter((r: { status?: string }) => r.status)
          .map((r: { email: string }) => r.email);
        expect(new Set(enrolled).size).toBe(enrolled.length);
        expect(enrolled).toHaveLength(Math.min(licences, 60));
        expect(a.body.summary.enrolled + b.body.summary.enrolled).toBe(Math.min(licences, 60));
        expect(await licenceInvariants(database.db, org.orgId, emails)).toEqual({
          members_without_one_licence: 0,
          stray_licences: 0,
          members: Math.min(licences, 60),
          licences_attribuees: Math.min(licences, 60),
          enrolled_events: Math.min(licences, 60),
          orphan_accounts: 0,
        });
      }
    }
  }, 120_000);

  it('atomic batches at once that the licences cover one at a time: exactly one is enrolled', async () => {
    for (let round = 0; round < rounds; round += 1) {
      const org = await newOrg(5);
      const batches = Array.from({ length: 10 }, (_, index) => learnerEmails(`r${round}-atomique-${index}-`, 3));
      const responses = await Promise.all(
        batches.map((batch, index) => post(index, org.writeKey, { users: batch.map((email) => ({ email })), atomic: true })),
      );
      expect(countBy(responses.map((r) => r.status))).toEqual(
        new Map([
          [200, 1],
          [409, 9],
        ]),
      );
      expect(responses.find((r) => r.status === 200)!.body.summary).toEqual({ requested: 3, enrolled: 3, failed: 0 });
      expect(await licenceInvariants(database.db, org.orgId, batches.flat())).toMatchObject({
        members_without_one_licence: 0,
        stray_licences: 0,
        members: 3,
        licences_attribuees: 3,
        orphan_accounts: 0,
      });
    }
  }, 120_000);

  it('an atomic batch waits for one in progress to finish instead of skipping its locked licences', async () => {
    const org = await newOrg(5);
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const holding = database.db.transaction().execute(async (trx) => {
      // Another atomic batch mid-pick: its turn taken and all the licences locked, about to fail.
      await takeAtomicPickingTurn(trx, org.orgId);
      await sql`select id from licences where org_id = ${org.orgId} for update`.execute(trx);
      await released;
      throw new Error('batch refused');
    });
    const waiting = post(0, org.writeKey, { users: learnerEmails('patient', 3).map((email) => ({ email })), atomic: true });
    let answered = false;
    void waiting.finally(() => {
      answered = true;
    });
    // Proceed once the request is queued behind the other batch's turn (or, if broken, has answered).
    while (!answered) {
      const { rows } = await sql<{ waiting: number }>`select count(*)::int as waiting from pg_locks
        where locktype = 'advisory' and not granted and database = (select oid from pg_database where datname = current_database())`.execute(
        database.db,
      );
      if (rows[0]!.waiting > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    release();
    await expect(holding).rejects.toThrow('batch refused');
    const response = await waiting;
    expect(response.status).toBe(200);
    expect(response.body.summary).toEqual({ requested: 3, enrolled: 3, failed: 0 });
  });
});
