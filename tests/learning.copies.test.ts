import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { attendanceResource } from '../db/resources/attendance';
import type { ResourceFilter } from '../db/resources/definition';
import { quizAnswersResource } from '../db/resources/quiz-answers';
import { usersResource } from '../db/resources/users';
import { seededOrganisation, seededYear } from './support/learning-factories';
import { useTestDatabase } from './support/lifecycle';

// Rows carry copies of what their resource filters, orders or shows from another table (a member's
// email and name, an attendance's session and email, an answer's attempt), kept by triggers
// whoever writes: what the resources list follows the source when it changes.

const database = useTestDatabase();
let org: Awaited<ReturnType<typeof seededOrganisation>>;

beforeAll(async () => {
  org = await seededOrganisation(database.db, { name: 'Formations Copies', learners: 12, seed: 51 });
}, 120_000);

const filter = (overrides: Partial<ResourceFilter> = {}): ResourceFilter => ({
  orgId: org.orgId,
  year: seededYear,
  updatedSince: null,
  membershipId: null,
  programmeId: null,
  ...overrides,
});

describe('copies kept by triggers', () => {
  it('a member shows their account’s email and name, renamed or not', async () => {
    const { db } = database;
    const member = await db
      .selectFrom('memberships as m')
      .innerJoin('accounts as a', 'a.id', 'm.account_id')
      .select(['m.id', 'a.id as account_id', 'a.email', 'a.name', 'm.email as copied_email', 'm.name as copied_name'])
      .where('m.org_id', '=', org.orgId)
      .orderBy('m.id')
      .executeTakeFirstOrThrow();
    expect([member.copied_email, member.copied_name]).toEqual([member.email, member.name]);
    await sql`update accounts set email = 'renomme@exemple.fr', name = 'Nom Changé' where id = ${member.account_id}`.execute(db);
    const rows = await usersResource.select(db, filter({ membershipId: member.id })).execute();
    expect(rows.map((row) => [row.email, row.nom])).toEqual([['renomme@exemple.fr', 'Nom Changé']]);
    const attendance = await attendanceResource.select(db, filter({ membershipId: member.id })).execute();
    for (const row of attendance) expect(row.email).toBe('renomme@exemple.fr');
  });

  it('an attendance moves with its session, to another year and title', async () => {
    const { db } = database;
    const session = await sql<{ id: string; attendees: number }>`
      select ts.id, count(*)::int as attendees from tutoring_sessions ts join tutoring_attendance ta on ta.session_id = ts.id
      where ts.org_id = ${org.orgId} and ts.starts_at >= '2026-03-01' group by ts.id order by ts.id limit 1`.execute(db);
    const { id, attendees } = session.rows[0]!;
    const ofSession = (rows: { seance: string }[]) => rows.filter((row) => row.seance === 'Séance déplacée');
    await sql`update tutoring_sessions set starts_at = starts_at - interval '1 year', title = 'Séance déplacée' where id = ${id}`.execute(
      db,
    );
    expect(ofSession(await attendanceResource.select(db, filter({ year: seededYear - 1 })).execute())).toHaveLength(attendees);
    expect(ofSession(await attendanceResource.select(db, filter()).execute())).toHaveLength(0);
  });

  it('an answer shows its attempt’s score and verdict, changed or not', async () => {
    const { db } = database;
    const attempt = await db
      .selectFrom('quiz_attempts')
      .select(['id', 'membership_id'])
      .where('org_id', '=', org.orgId)
      .where('completed_day', '>=', `${seededYear}-01-01`)
      .orderBy('id')
      .executeTakeFirstOrThrow();
    await sql`update quiz_attempts set score = 3, passed = false where id = ${attempt.id}`.execute(db);
    const rows = await quizAnswersResource.select(db, filter({ membershipId: attempt.membership_id })).execute();
    const answers = await db.selectFrom('quiz_answers').select('id').where('attempt_id', '=', attempt.id).execute();
    expect(rows.filter((row) => row.score_tentative === 3 && row.reussi === 'Non')).toHaveLength(answers.length);
  });
});
