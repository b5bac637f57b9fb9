import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './support/database';
import { addLearner, createOrgWithKeys } from './support/factories';

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database.drop();
});

async function programmeWithLessons(orgId: string, lessons: number) {
  const { db } = database;
  const programme = await db.insertInto('programmes').values({ org_id: orgId, slug: `p-${lessons}`, title: 'P' }).returning('id').executeTakeFirstOrThrow();
  const course = await db.insertInto('courses').values({ org_id: orgId, programme_id: programme.id, position: 1, title: 'C' }).returning('id').executeTakeFirstOrThrow();
  const module = await db.insertInto('modules').values({ org_id: orgId, programme_id: programme.id, course_id: course.id, position: 1, title: 'M' }).returning('id').executeTakeFirstOrThrow();
  const lessonIds: string[] = [];
  for (let i = 1; i <= lessons; i++) {
    const lesson = await db.insertInto('lessons').values({ org_id: orgId, programme_id: programme.id, module_id: module.id, position: i, key: `l${i}`, title: `L${i}` })
      .returning('id').executeTakeFirstOrThrow();
    lessonIds.push(lesson.id);
  }
  return { programmeId: programme.id, lessonIds };
}

describe('learning schema', () => {
  it('keeps the enrolment summary in step with lesson_progress, row by row and in bulk', async () => {
    const { db } = database;
    const { orgId } = await createOrgWithKeys(db);
    const { membershipId } = await addLearner(db, orgId, { email: 'a@exemple.fr' });
    const { programmeId, lessonIds } = await programmeWithLessons(orgId, 3);
    await db.insertInto('programme_enrolments').values({ org_id: orgId, membership_id: membershipId, programme_id: programmeId, enrolled_at: '2026-01-05T10:00:00Z' }).execute();
    const summary = () => db.selectFrom('programme_enrolments').select(['lessons_viewed', 'first_visit_at', 'last_visit_at'])
      .where('membership_id', '=', membershipId).executeTakeFirstOrThrow();

    expect(await summary()).toEqual({ lessons_viewed: 0, first_visit_at: null, last_visit_at: null });
    await db.insertInto('lesson_progress').values([
      { org_id: orgId, membership_id: membershipId, programme_id: programmeId, lesson_id: lessonIds[0]!, viewed: true, first_visit_at: '2026-01-06T10:00:00Z', last_visit_at: '2026-01-07T10:00:00Z' },
      { org_id: orgId, membership_id: membershipId, programme_id: programmeId, lesson_id: lessonIds[1]!, viewed: false, first_visit_at: '2026-01-08T10:00:00Z', last_visit_at: '2026-01-08T10:00:00Z' },
    ]).execute();
    expect(await summary()).toEqual({ lessons_viewed: 1, first_visit_at: new Date('2026-01-06T10:00:00Z'), last_visit_at: new Date('2026-01-08T10:00:00Z') });

    await db.updateTable('lesson_progress').set({ viewed: true, last_visit_at: '2026-02-01T09:00:00Z' }).where('lesson_id', '=', lessonIds[1]!).execute();
    expect(await summary()).toMatchObject({ lessons_viewed: 2, last_visit_at: new Date('2026-02-01T09:00:00Z') });

    await db.deleteFrom('lesson_progress').where('membership_id', '=', membershipId).execute();
    expect(await summary()).toEqual({ lessons_viewed: 0, first_visit_at: null, last_visit_at: null });
  });

  it('refuses progress in a programme the learner is not enrolled in, and a lesson of another programme', async () => {
    const { db } = database;
    const { orgId } = await createOrgWithKeys(db);
    const { membershipId } = await addLearner(db, orgId, { email: 'b@exemple.fr' });
    const first = await programmeWithLessons(orgId, 1);
    const second = await programmeWithLessons(orgId, 2);
    const row = { org_id: orgId, membership_id: membershipId, programme_id: first.programmeId, lesson_id: first.lessonIds[0]!, first_visit_at: '2026-01-06T10:00:00Z', last_visit_at: '2026-01-06T10:00:00Z' };
    await expect(db.insertInto('lesson_progress').values(row).execute()).rejects.toThrow(/lesson_progress_enrolment_fkey/);
    await db.insertInto('programme_enrolments').values({ org_id: orgId, membership_id: membershipId, programme_id: first.programmeId }).execute();
    await expect(db.insertInto('lesson_progress').values({ ...row, lesson_id: second.lessonIds[0]! }).execute()).rejects.toThrow(/lesson_progress_lesson_fkey/);
    await db.insertInto('lesson_progress').values(row).execute();
  });

  it('allows one certificate per enrolment, with a completion score only on certificates', async () => {
    const { db } = database;
    const { orgId } = await createOrgWithKeys(db);
    const { membershipId } = await addLearner(db, orgId, { email: 'c@exemple.fr' });
    const { programmeId } = await programmeWithLessons(orgId, 4);
    await db.insertInto('programme_enrolments').values({ org_id: orgId, membership_id: membershipId, programme_id: programmeId }).execute();
    const certificate = { org_id: orgId, membership_id: membershipId, programme_id: programmeId, type: 'Attestation' as const, issued_at: '2026-03-01T10:00:00Z', hours: 12.5, completion_score: 90 };
    await db.insertInto('documents').values(certificate).execute();
    await expect(db.insertInto('documents').values(certificate).execute()).rejects.toThrow(/documents_one_certificate_per_enrolment/);
    await expect(db.insertInto('documents').values({ ...certificate, type: 'PIF' }).execute()).rejects.toThrow(/documents_score_of_certificates/);
    const hours = await sql<{ hours: number }>`select hours from documents where membership_id = ${membershipId}`.execute(db);
    expect(hours.rows[0]!.hours).toBe(12.5);
  });
});
