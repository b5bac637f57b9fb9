import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { addLearner, createOrgWithKeys } from './support/factories';
import { useTestDatabase } from './support/lifecycle';

const database = useTestDatabase();

async function programmeWithLessons(orgId: string, lessons: number) {
  const { db } = database;
  const programme = await db
    .insertInto('programmes')
    .values({ org_id: orgId, slug: `p-${lessons}`, title: 'P' })
    .returning('id')
    .executeTakeFirstOrThrow();
  const course = await db
    .insertInto('courses')
    .values({ org_id: orgId, programme_id: programme.id, position: 1, title: 'C' })
    .returning('id')
    .executeTakeFirstOrThrow();
  const module = await db
    .insertInto('modules')
    .values({ org_id: orgId, programme_id: programme.id, course_id: course.id, position: 1, title: 'M' })
    .returning('id')
    .executeTakeFirstOrThrow();
  const lessonIds: string[] = [];
  for (let i = 1; i <= lessons; i++) {
    const lesson = await db
      .insertInto('lessons')
      .values({ org_id: orgId, programme_id: programme.id, module_id: module.id, position: i, key: `l${i}`, title: `L${i}` })
      .returning('id')
      .executeTakeFirstOrThrow();
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
    await db
      .insertInto('programme_enrolments')
      .values({ org_id: orgId, membership_id: membershipId, programme_id: programmeId, enrolled_at: '2026-01-05T10:00:00Z' })
      .execute();
    const summary = () =>
      db
        .selectFrom('programme_enrolments')
        .select(['lessons_viewed', 'first_visit_at', 'last_visit_at'])
        .where('membership_id', '=', membershipId)
        .executeTakeFirstOrThrow();

    expect(await summary()).toEqual({ lessons_viewed: 0, first_visit_at: null, last_visit_at: null });
    await db
      .insertInto('lesson_progress')
      .values([
        {
          org_id: orgId,
          membership_id: membershipId,
          programme_id: programmeId,
          lesson_id: lessonIds[0]!,
          viewed: true,
          viewed_at: '2026-01-06T10:00:00Z',
          first_visit_at: '2026-01-06T10:00:00Z',
          last_visit_at: '2026-01-07T10:00:00Z',
        },
        {
          org_id: orgId,
          membership_id: membershipId,
          programme_id: programmeId,
          lesson_id: lessonIds[1]!,
          viewed: false,
          first_visit_at: '2026-01-08T10:00:00Z',
          last_visit_at: '2026-01-08T10:00:00Z',
        },
      ])
      .execute();
    expect(await summary()).toEqual({
      lessons_viewed: 1,
      first_visit_at: new Date('2026-01-06T10:00:00Z'),
      last_visit_at: new Date('2026-01-08T10:00:00Z'),
    });

    await db
      .updateTable('lesson_progress')
      .set({ viewed: true, viewed_at: '2026-02-01T09:00:00Z', last_visit_at: '2026-02-01T09:00:00Z' })
      .where('lesson_id', '=', lessonIds[1]!)
      .execute();
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
    const row = {
      org_id: orgId,
      membership_id: membershipId,
      programme_id: first.programmeId,
      lesson_id: first.lessonIds[0]!,
      first_visit_at: '2026-01-06T10:00:00Z',
      last_visit_at: '2026-01-06T10:00:00Z',
    };
    // Without an enrolment there is no enrolment to point at.
    await expect(db.insertInto('lesson_progress').values(row).execute()).rejects.toThrow(/lesson_progress_enrolment_fkey/);
    await db
      .insertInto('programme_enrolments')
      .values({ org_id: orgId, membership_id: membershipId, programme_id: first.programmeId })
      .execute();
    await expect(
      db
        .insertInto('lesson_progress')
        .values({ ...row, lesson_id: second.lessonIds[0]! })
        .execute(),
    ).rejects.toThrow(/lesson_progress_lesson_fkey/);
    await db.insertInto('lesson_progress').values(row).execute();
  });

  it('records when a lesson became viewed exactly when it is viewed, not before its first visit', async () => {
    const { db } = database;
    const { orgId } = await createOrgWithKeys(db);
    const { membershipId } = await addLearner(db, orgId, { email: 'e@exemple.fr' });
    const { programmeId, lessonIds } = await programmeWithLessons(orgId, 5);
    await db.insertInto('programme_enrolments').values({ org_id: orgId, membership_id: membershipId, programme_id: programmeId }).execute();
    const row = {
      org_id: orgId,
      membership_id: membershipId,
      programme_id: programmeId,
      lesson_id: lessonIds[0]!,
      first_visit_at: '2026-01-06T10:00:00Z',
      last_visit_at: '2026-01-06T10:00:00Z',
    };
    await expect(
      db
        .insertInto('lesson_progress')
        .values({ ...row, viewed: true })
        .execute(),
    ).rejects.toThrow(/lesson_progress_viewed_at/);
    await expect(
      db
        .insertInto('lesson_progress')
        .values({ ...row, viewed: false, viewed_at: '2026-01-06T10:00:00Z' })
        .execute(),
    ).rejects.toThrow(/lesson_progress_viewed_at/);
    await expect(
      db
        .insertInto('lesson_progress')
        .values({ ...row, viewed: true, viewed_at: '2026-01-05T10:00:00Z' })
        .execute(),
    ).rejects.toThrow(/lesson_progress_viewed_at/);
    await db
      .insertInto('lesson_progress')
      .values({ ...row, viewed: true, viewed_at: '2026-01-06T10:00:00Z' })
      .execute();
  });

  it('copies the attempt (learner, programme, number, Paris day) onto each quiz answer', async () => {
    const { db } = database;
    const { orgId } = await createOrgWithKeys(db);
    const { membershipId } = await addLearner(db, orgId, { email: 'f@exemple.fr' });
    const { programmeId, lessonIds } = await programmeWithLessons(orgId, 6);
    await db.insertInto('programme_enrolments').values({ org_id: orgId, membership_id: membershipId, programme_id: programmeId }).execute();
    const question = await db
      .insertInto('quiz_questions')
      .values({ org_id: orgId, lesson_id: lessonIds[0]!, position: 1, wording: 'Q ?', options: ['a', 'b'], correct_option: 'a' })
      .returning('id')
      .executeTakeFirstOrThrow();
    // 23:30 UTC on 31 December is already 1 January in Paris.
    const attempt = await db
      .insertInto('quiz_attempts')
      .values({
        org_id: orgId,
        membership_id: membershipId,
        programme_id: programmeId,
        lesson_id: lessonIds[0]!,
        attempt_no: 2,
        score: 100,
        passed: true,
        completed_at: '2025-12-31T23:30:00Z',
      })
      .returning(['id', 'completed_day'])
      .executeTakeFirstOrThrow();
    expect(attempt.completed_day).toBe('2026-01-01');
    await db
      .insertInto('quiz_answers')
      .values({
        org_id: orgId,
        attempt_id: attempt.id,
        question_id: question.id,
        position: 1,
        chosen_option: 'a',
        is_correct: true,
        answered_at: '2025-12-31T23:29:00Z',
      })
      .execute();
    const copied = () =>
      db
        .selectFrom('quiz_answers')
        .select(['membership_id', 'programme_id', 'attempt_no', 'attempt_day'])
        .where('attempt_id', '=', attempt.id)
        .executeTakeFirstOrThrow();
    expect(await copied()).toEqual({ membership_id: membershipId, programme_id: programmeId, attempt_no: 2, attempt_day: '2026-01-01' });
    await db
      .updateTable('quiz_attempts')
      .set({ completed_at: '2026-02-03T10:00:00Z', attempt_no: 3 })
      .where('id', '=', attempt.id)
      .execute();
    expect(await copied()).toMatchObject({ attempt_no: 3, attempt_day: '2026-02-03' });
  });

  it('allows one certificate per enrolment, with a completion score only on certificates', async () => {
    const { db } = database;
    const { orgId } = await createOrgWithKeys(db);
    const { membershipId } = await addLearner(db, orgId, { email: 'c@exemple.fr' });
    const { programmeId } = await programmeWithLessons(orgId, 4);
    await db.insertInto('programme_enrolments').values({ org_id: orgId, membership_id: membershipId, programme_id: programmeId }).execute();
    const certificate = {
      org_id: orgId,
      membership_id: membershipId,
      programme_id: programmeId,
      type: 'Attestation' as const,
      issued_at: '2026-03-01T10:00:00Z',
      hours: 12.5,
      completion_score: 90,
    };
    await db.insertInto('documents').values(certificate).execute();
    await expect(db.insertInto('documents').values(certificate).execute()).rejects.toThrow(/documents_one_certificate_per_enrolment/);
    await expect(
      db
        .insertInto('documents')
        .values({ ...certificate, type: 'PIF' })
        .execute(),
    ).rejects.toThrow(/documents_score_of_certificates/);
    const hours = await sql<{ hours: number }>`select hours from documents where membership_id = ${membershipId}`.execute(db);
    expect(hours.rows[0]!.hours).toBe(12.5);
  });
});
