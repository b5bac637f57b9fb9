import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { completeQuiz, openLesson, recordLogin, submitSatisfaction } from '../db/activity';
import type { DB } from '../db/connection';
import { seededOrganisation, seededYear } from './support/learning-factories';
import { useTestDatabase } from './support/lifecycle';

// The learners' figures of each year (learner_years, the rows of `learners`) are kept by triggers in
// the transactions that write the facts. Whatever is written, updated or deleted, alone, at once or
// by concurrent transactions, they must equal a recount from the facts.

const database = useTestDatabase();
let org: Awaited<ReturnType<typeof seededOrganisation>>;

beforeAll(async () => {
  org = await seededOrganisation(database.db, { name: 'Formations Figures', learners: 30, seed: 41 });
  await seededOrganisation(database.db, { name: 'Autre organisme', learners: 10, seed: 42 });
}, 120_000);

const contents = async (db: DB) => (await sql`select * from learner_years order by membership_id, year`.execute(db)).rows;

class RollBack extends Error {}

/** What the triggers kept equals a recount of every organisation from the facts (made in a transaction rolled back). */
async function expectKeptExact(): Promise<void> {
  const kept = await contents(database.db);
  let recounted: unknown[] = [];
  await database.db
    .transaction()
    .execute(async (trx) => {
      await sql`select learner_years_recount(id) from organisations`.execute(trx);
      recounted = await contents(trx);
      throw new RollBack();
    })
    .catch((error) => {
      if (!(error instanceof RollBack)) throw error;
    });
  expect(kept).toEqual(recounted);
}

/** A learner of the organisation with lessons to open and a quiz to take, in a programme they follow. */
async function learnersWithWork(count: number) {
  const rows = await sql<{ membership_id: string; programme_id: string; lesson_id: string; quiz_lesson_id: string }>`
    select pe.membership_id, pe.programme_id,
      (select l.id from lessons l where l.programme_id = pe.programme_id and not l.has_quiz order by l.id limit 1) as lesson_id,
      (select l.id from lessons l where l.programme_id = pe.programme_id and l.has_quiz order by l.id limit 1) as quiz_lesson_id
    from programme_enrolments pe where pe.org_id = ${org.orgId}
    order by pe.membership_id, pe.programme_id limit ${count}`.execute(database.db);
  return rows.rows;
}

describe('learner years kept by triggers', () => {
  it('equal a recount after the bulk load, with a row for each learner and year with activity', async () => {
    await expectKeptExact();
    const years = await sql<{ year: number }>`select distinct year from learner_years where org_id = ${org.orgId} order by year`.execute(
      database.db,
    );
    expect(years.rows.map((row) => row.year)).toEqual([seededYear - 2, seededYear - 1, seededYear]);
  });

  it('follow every fact moved across years, removed, or cascaded', async () => {
    const { db } = database;
    await sql`update logins set started_at = started_at - interval '1 year', ended_at = ended_at - interval '1 year' where id % 3 = 0`.execute(
      db,
    );
    await sql`update activity_intervals set started_at = '2025-12-31T22:50:00Z', ended_at = '2025-12-31T22:50:00Z'::timestamptz + (10 + id % 30) * interval '1 minute'
      where kind <> 'tutorat' and id % 11 = 0`.execute(db);
    await sql`update quiz_attempts set completed_at = completed_at - interval '200 days' where score % 5 = 0`.execute(db);
    await sql`update tutoring_sessions set starts_at = starts_at - interval '1 year' where planned_minutes = 60`.execute(db);
    await sql`update documents set issued_at = issued_at + interval '90 days' where type = 'Attestation'`.execute(db);
    await sql`update satisfaction_surveys set answered_at = answered_at - interval '1 year' where rating = 4`.execute(db);
    await expectKeptExact();
    await sql`delete from logins where id % 7 = 0`.execute(db);
    await sql`delete from quiz_attempts where score % 7 = 0`.execute(db);
    await sql`delete from tutoring_attendance where connected_minutes % 4 = 0`.execute(db);
    await sql`delete from satisfaction_surveys where nps % 3 = 0`.execute(db);
    await sql`delete from programme_enrolments where id in (select id from programme_enrolments where org_id = ${org.orgId} order by id limit 5)`.execute(
      db,
    );
    await expectKeptExact();
    // A learner removed (their licence first: a live licence keeps its holder) takes their figures along.
    const removed = sql`(select id from memberships where org_id = ${org.orgId} order by id limit 2)`;
    await sql`delete from licences where membership_id in ${removed}`.execute(db);
    await sql`delete from memberships where id in ${removed}`.execute(db);
    await expectKeptExact();
  });

  it('stay exact when the write paths record the same learners’ activity at once', async () => {
    const learners = await learnersWithWork(8);
    const at = (minute: number) => new Date(Date.UTC(seededYear, 10, 23, 8, minute));
    // Several concurrent transactions per learner, each through a write path: lessons, logins,
    // quizzes and surveys of the same learners interleave.
    await Promise.all(
      learners.flatMap((learner, i) => [
        openLesson(database.db, {
          orgId: org.orgId,
          membershipId: learner.membership_id,
          lessonId: learner.lesson_id,
          openedAt: at(2 * i),
          activeSeconds: 60,
        }),
        recordLogin(database.db, {
          orgId: org.orgId,
          membershipId: learner.membership_id,
          startedAt: at(2 * i + 1),
          endedAt: at(2 * i + 30),
          ip: '192.0.2.1',
          userAgent: null,
        }),
        (async () => {
          const questions = await database.db
            .selectFrom('quiz_questions')
            .select(['id', 'correct_option'])
            .where('lesson_id', '=', learner.quiz_lesson_id)
            .execute();
          await completeQuiz(database.db, {
            orgId: org.orgId,
            membershipId: learner.membership_id,
            lessonId: learner.quiz_lesson_id,
            completedAt: at(40 + i),
            answers: questions.map((question) => ({
              questionId: question.id,
              chosenOption: question.correct_option,
              answeredAt: at(40 + i),
            })),
          });
        })(),
        submitSatisfaction(database.db, {
          orgId: org.orgId,
          membershipId: learner.membership_id,
          programmeId: learner.programme_id,
          rating: 5,
          nps: 10,
          verbatim: null,
          answeredAt: at(50 + i),
        }),
      ]),
    );
    await expectKeptExact();
    const figures = await database.db
      .selectFrom('learner_years')
      .select(['membership_id', 'satisfaction_rating', 'satisfaction_nps'])
      .where('year', '=', seededYear)
      .where(
        'membership_id',
        'in',
        learners.map((learner) => learner.membership_id),
      )
      .execute();
    // The survey of the write path is each learner's latest of the year.
    expect(figures.map((row) => [row.satisfaction_rating, row.satisfaction_nps])).toEqual(figures.map(() => [5, 10]));
  });
});
