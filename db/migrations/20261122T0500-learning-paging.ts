import { type Kysely, sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new one.
// Paging the largest resources from one index each, found with EXPLAIN ANALYZE on an organisation
// of 10,000 learners (1.6 million rows) among others:
// - quiz_attempts gets its Paris day as a stored column, indexed for `evaluations`;
// - quiz_answers carries its attempt's learner, programme, number and Paris day (copied by a
//   trigger, whoever inserts), so `quiz-answers` is counted and skipped on one index, in order;
// - lesson_progress carries its enrolment date, so `progress` counts rows per lesson on one index;
// - tutoring_attendance gets an organisation index, so no plan reads another organisation's rows.
export async function up(db: Kysely<any>): Promise<void> {
  // The Paris day of an attempt as a column: an index on it serves `evaluations` index-only (an
  // index on the expression cannot, PostgreSQL then needs completed_at from the table).
  await sql`alter table quiz_attempts add column completed_day date
    generated always as ((completed_at at time zone 'Europe/Paris')::date) stored`.execute(db);
  for (const [name, column] of [
    ['org', 'org_id'],
    ['programme', 'programme_id'],
    ['member', 'membership_id'],
  ]) {
    await sql.raw(`drop index quiz_attempts_${name}_order_idx`).execute(db);
    await sql.raw(`create index quiz_attempts_${name}_order_idx on quiz_attempts (${column}, completed_day, attempt_no, id)`).execute(db);
  }

  await db.schema
    .alterTable('quiz_answers')
    .addColumn('membership_id', 'uuid')
    .addColumn('programme_id', 'uuid')
    .addColumn('attempt_no', 'integer')
    .addColumn('attempt_day', 'date')
    .execute();
  await sql`update quiz_answers ans
    set membership_id = qa.membership_id, programme_id = qa.programme_id, attempt_no = qa.attempt_no, attempt_day = qa.completed_day
    from quiz_attempts qa where qa.id = ans.attempt_id`.execute(db);
  for (const column of ['membership_id', 'programme_id', 'attempt_no', 'attempt_day']) {
    await sql`alter table quiz_answers alter column ${sql.ref(column)} set not null`.execute(db);
  }

  await sql`create function quiz_answers_copy_attempt() returns trigger language plpgsql as $$
    begin
      select qa.membership_id, qa.programme_id, qa.attempt_no, qa.completed_day
        into new.membership_id, new.programme_id, new.attempt_no, new.attempt_day
        from quiz_attempts qa where qa.id = new.attempt_id;
      return new;
    end $$`.execute(db);
  await sql`create trigger quiz_answers_copy_attempt before insert or update of attempt_id on quiz_answers
    for each row execute function quiz_answers_copy_attempt()`.execute(db);
  await sql`create function quiz_attempts_propagate() returns trigger language plpgsql as $$
    begin
      update quiz_answers set membership_id = new.membership_id, programme_id = new.programme_id, attempt_no = new.attempt_no,
        attempt_day = new.completed_day
      where attempt_id = new.id;
      return null;
    end $$`.execute(db);
  await sql`create trigger quiz_attempts_propagate after update of membership_id, programme_id, attempt_no, completed_at on quiz_attempts
    for each row execute function quiz_attempts_propagate()`.execute(db);

  // The order of `quiz-answers`: attempt day, attempt number, the attempt, question position, answer.
  await sql`create index quiz_answers_org_order_idx on quiz_answers (org_id, attempt_day, attempt_no, attempt_id, position, id)`.execute(
    db,
  );
  await sql`create index quiz_answers_member_order_idx on quiz_answers (membership_id, attempt_day, attempt_no, attempt_id, position, id)`.execute(
    db,
  );
  await sql`create index quiz_answers_programme_order_idx on quiz_answers (programme_id, attempt_day, attempt_no, attempt_id, position, id)`.execute(
    db,
  );

  // `progress` counts its rows per lesson from the organisation's visits alone: each visit carries
  // its enrolment date (copied by a trigger, and kept in step when an enrolment date changes).
  await db.schema.alterTable('lesson_progress').addColumn('enrolled_at', 'timestamptz').execute();
  await sql`update lesson_progress lp set enrolled_at = pe.enrolled_at
    from programme_enrolments pe where pe.membership_id = lp.membership_id and pe.programme_id = lp.programme_id`.execute(db);
  await sql`alter table lesson_progress alter column enrolled_at set not null`.execute(db);
  await sql`create function lesson_progress_copy_enrolment() returns trigger language plpgsql as $$
    begin
      select pe.enrolled_at into new.enrolled_at from programme_enrolments pe
        where pe.membership_id = new.membership_id and pe.programme_id = new.programme_id;
      return new;
    end $$`.execute(db);
  await sql`create trigger lesson_progress_copy_enrolment before insert or update of membership_id, programme_id on lesson_progress
    for each row execute function lesson_progress_copy_enrolment()`.execute(db);
  await sql`create function programme_enrolments_propagate() returns trigger language plpgsql as $$
    begin
      update lesson_progress set enrolled_at = new.enrolled_at where membership_id = new.membership_id and programme_id = new.programme_id;
      return null;
    end $$`.execute(db);
  await sql`create trigger programme_enrolments_propagate after update of enrolled_at on programme_enrolments
    for each row execute function programme_enrolments_propagate()`.execute(db);
  await sql`create index lesson_progress_org_lesson_idx on lesson_progress (org_id, lesson_id)
    include (membership_id, programme_id, last_visit_at, enrolled_at)`.execute(db);
  await sql`create index tutoring_attendance_org_idx on tutoring_attendance (org_id, session_id)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger if exists programme_enrolments_propagate on programme_enrolments`.execute(db);
  await sql`drop function if exists programme_enrolments_propagate()`.execute(db);
  await sql`drop trigger if exists lesson_progress_copy_enrolment on lesson_progress`.execute(db);
  await sql`drop function if exists lesson_progress_copy_enrolment()`.execute(db);
  await db.schema.alterTable('lesson_progress').dropColumn('enrolled_at').execute();
  await sql`drop trigger if exists quiz_attempts_propagate on quiz_attempts`.execute(db);
  await sql`drop function if exists quiz_attempts_propagate()`.execute(db);
  await sql`drop trigger if exists quiz_answers_copy_attempt on quiz_answers`.execute(db);
  await sql`drop function if exists quiz_answers_copy_attempt()`.execute(db);
  for (const index of [
    'quiz_answers_org_order_idx',
    'quiz_answers_member_order_idx',
    'quiz_answers_programme_order_idx',
    'lesson_progress_org_lesson_idx',
    'tutoring_attendance_org_idx',
  ]) {
    await sql`drop index if exists ${sql.ref(index)}`.execute(db);
  }
  await db.schema
    .alterTable('quiz_answers')
    .dropColumn('membership_id')
    .dropColumn('programme_id')
    .dropColumn('attempt_no')
    .dropColumn('attempt_day')
    .execute();
  await db.schema.alterTable('quiz_attempts').dropColumn('completed_day').execute();
}
