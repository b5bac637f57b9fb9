import { type Kysely, sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new one.
// The learning data: the shape of a programme (courses, modules, lessons, quiz questions) and what
// learners do in it (progress, activity, logins, tutoring, quizzes, documents, surveys, ratings).
// Every table carries org_id; composite foreign keys tie a learner's rows to a programme they are
// enrolled in and to a lesson of that programme, so the data cannot contradict itself.
export async function up(db: Kysely<any>): Promise<void> {
  const orgColumn = (c: any) => c.notNull().references('organisations.id').onDelete('cascade');

  // What a learner's enrolment summary needs, kept up to date by a trigger on lesson_progress so
  // the `enrollments` natural date can be indexed.
  await db.schema
    .alterTable('programme_enrolments')
    .addColumn('lessons_viewed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('first_visit_at', 'timestamptz')
    .addColumn('last_visit_at', 'timestamptz')
    .execute();
  await sql`create index programme_enrolments_org_natural_idx on programme_enrolments
    (org_id, (coalesce(last_visit_at, enrolled_at)), id)`.execute(db);
  await sql`create index programme_enrolments_programme_natural_idx on programme_enrolments
    (programme_id, (coalesce(last_visit_at, enrolled_at)), id)`.execute(db);

  await db.schema
    .createTable('courses')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('org_id', 'uuid', orgColumn)
    .addColumn('programme_id', 'uuid', (c) => c.notNull().references('programmes.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addUniqueConstraint('courses_programme_position_key', ['programme_id', 'position'])
    .execute();

  // `position`: order of the module within its programme (across courses).
  await db.schema
    .createTable('modules')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('org_id', 'uuid', orgColumn)
    .addColumn('programme_id', 'uuid', (c) => c.notNull().references('programmes.id').onDelete('cascade'))
    .addColumn('course_id', 'uuid', (c) => c.notNull().references('courses.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addUniqueConstraint('modules_programme_position_key', ['programme_id', 'position'])
    .execute();

  // `position`: order within the module. `key`: the stable lesson key of webhook events.
  // `has_quiz`: the lesson holds a quiz; `is_milestone`: a milestone / module-end lesson, rateable.
  await db.schema
    .createTable('lessons')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('org_id', 'uuid', orgColumn)
    .addColumn('programme_id', 'uuid', (c) => c.notNull().references('programmes.id').onDelete('cascade'))
    .addColumn('module_id', 'uuid', (c) => c.notNull().references('modules.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('estimated_minutes', 'integer', (c) => c.notNull().defaultTo(15).check(sql`estimated_minutes >= 0`))
    .addColumn('has_quiz', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('is_milestone', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('pass_score', 'integer', (c) => c.notNull().defaultTo(70).check(sql`pass_score between 0 and 100`))
    .addUniqueConstraint('lessons_module_position_key', ['module_id', 'position'])
    .addUniqueConstraint('lessons_programme_key_key', ['programme_id', 'key'])
    .addUniqueConstraint('lessons_id_programme_key', ['id', 'programme_id'])
    .execute();

  await db.schema
    .createTable('quiz_questions')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('org_id', 'uuid', orgColumn)
    .addColumn('lesson_id', 'uuid', (c) => c.notNull().references('lessons.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('wording', 'text', (c) => c.notNull())
    .addColumn('options', sql`text[]`, (c) => c.notNull())
    .addColumn('correct_option', 'text', (c) => c.notNull())
    .addUniqueConstraint('quiz_questions_lesson_position_key', ['lesson_id', 'position'])
    .addCheckConstraint('quiz_questions_correct_is_an_option', sql`correct_option = any(options)`)
    .execute();

  // One row per lesson a learner has opened (lessons never opened have none: `progress` shows them
  // as not viewed). The composite keys pin the lesson to the programme the learner is enrolled in.
  await db.schema
    .createTable('lesson_progress')
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedByDefaultAsIdentity())
    .addColumn('org_id', 'uuid', orgColumn)
    .addColumn('membership_id', 'uuid', (c) => c.notNull())
    .addColumn('programme_id', 'uuid', (c) => c.notNull())
    .addColumn('lesson_id', 'uuid', (c) => c.notNull())
    .addColumn('viewed', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('visits', 'integer', (c) => c.notNull().defaultTo(1).check(sql`visits >= 0`))
    .addColumn('active_seconds', 'integer', (c) => c.notNull().defaultTo(0).check(sql`active_seconds >= 0`))
    .addColumn('first_visit_at', 'timestamptz', (c) => c.notNull())
    .addColumn('last_visit_at', 'timestamptz', (c) => c.notNull())
    .addUniqueConstraint('lesson_progress_member_lesson_key', ['membership_id', 'lesson_id'])
    .addForeignKeyConstraint(
      'lesson_progress_enrolment_fkey',
      ['membership_id', 'programme_id'],
      'programme_enrolments',
      ['membership_id', 'programme_id'],
      (c) => c.onDelete('cascade'),
    )
    .addForeignKeyConstraint('lesson_progress_lesson_fkey', ['lesson_id', 'programme_id'], 'lessons', ['id', 'programme_id'], (c) =>
      c.onDelete('cascade'),
    )
    .addCheckConstraint('lesson_progress_visit_order', sql`last_visit_at >= first_visit_at`)
    .execute();
  await db.schema.createIndex('lesson_progress_enrolment_idx').on('lesson_progress').columns(['membership_id', 'programme_id']).execute();
  await db.schema.createIndex('lesson_progress_lesson_idx').on('lesson_progress').columns(['lesson_id', 'programme_id']).execute();

  // The enrolment summary (lessons viewed, first and last visit) follows lesson_progress, whoever
  // writes it (live write paths, the generator): one statement-level refresh per statement.
  await sql`create function refresh_enrolment_progress() returns trigger language plpgsql as $$
    begin
      update programme_enrolments pe
      set lessons_viewed = coalesce(s.viewed, 0), first_visit_at = s.first_visit, last_visit_at = s.last_visit
      from (select distinct membership_id, programme_id from changed) k
      left join lateral (
        select count(*) filter (where lp.viewed)::int as viewed, min(lp.first_visit_at) as first_visit, max(lp.last_visit_at) as last_visit
        from lesson_progress lp where lp.membership_id = k.membership_id and lp.programme_id = k.programme_id
      ) s on true
      where pe.membership_id = k.membership_id and pe.programme_id = k.programme_id;
      return null;
    end $$`.execute(db);
  for (const [event, table] of [
    ['insert', 'new'],
    ['update', 'new'],
    ['delete', 'old'],
  ] as const) {
    await sql
      .raw(`create trigger lesson_progress_${event}_refresh after ${event} on lesson_progress
      referencing ${table} table as changed for each statement execute function refresh_enrolment_progress()`)
      .execute(db);
  }

  // Tutoring sessions and attendance. A session may belong to no programme (open sessions).
  await db.schema
    .createTable('tutoring_sessions')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('org_id', 'uuid', orgColumn)
    .addColumn('programme_id', 'uuid', (c) => c.references('programmes.id').onDelete('set null'))
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('starts_at', 'timestamptz', (c) => c.notNull())
    .addColumn('planned_minutes', 'integer', (c) => c.notNull().check(sql`planned_minutes >= 0`))
    .addColumn('trainer_name', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('tutoring_sessions_org_start_idx')
    .on('tutoring_sessions')
    .columns(['org_id', 'starts_at', 'title', 'id'])
    .execute();
  await db.schema.createIndex('tutoring_sessions_programme_idx').on('tutoring_sessions').columns(['programme_id', 'starts_at']).execute();

  // `connected_minutes` is 0 for an absent learner; the tutoring activity interval of a present
  // learner (activity_intervals, kind tutorat) is exactly that long.
  await db.schema
    .createTable('tutoring_attendance')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('org_id', 'uuid', orgColumn)
    .addColumn('session_id', 'uuid', (c) => c.notNull().references('tutoring_sessions.id').onDelete('cascade'))
    .addColumn('membership_id', 'uuid', (c) => c.notNull().references('memberships.id').onDelete('cascade'))
    .addColumn('present', 'boolean', (c) => c.notNull())
    .addColumn('connected_minutes', 'integer', (c) => c.notNull().defaultTo(0).check(sql`connected_minutes >= 0`))
    .addColumn('signed_by_learner', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('signed_by_trainer', 'boolean', (c) => c.notNull().defaultTo(false))
    .addUniqueConstraint('tutoring_attendance_session_member_key', ['session_id', 'membership_id'])
    .execute();
  await db.schema
    .createIndex('tutoring_attendance_member_idx')
    .on('tutoring_attendance')
    .columns(['membership_id', 'session_id'])
    .execute();

  // Activity intervals: the time a learner was active, by kind. Overlaps between kinds are allowed
  // (a lab open during a course); `learners.temps_actif_min` is the length of their union.
  await db.schema
    .createTable('activity_intervals')
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedByDefaultAsIdentity())
    .addColumn('org_id', 'uuid', orgColumn)
    .addColumn('membership_id', 'uuid', (c) => c.notNull().references('memberships.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('cours', 'labia', 'tutorat')`))
    .addColumn('started_at', 'timestamptz', (c) => c.notNull())
    .addColumn('ended_at', 'timestamptz', (c) => c.notNull())
    .addColumn('programme_id', 'uuid', (c) => c.references('programmes.id').onDelete('set null'))
    .addColumn('lesson_id', 'uuid', (c) => c.references('lessons.id').onDelete('set null'))
    .addColumn('attendance_id', 'uuid', (c) => c.references('tutoring_attendance.id').onDelete('cascade'))
    // Bounded length: a year's intervals are found from a start-date range (see db/resources/learners.ts).
    .addCheckConstraint('activity_intervals_span', sql`ended_at >= started_at and ended_at <= started_at + interval '1 day'`)
    .execute();
  await sql`create index activity_intervals_org_start_idx on activity_intervals (org_id, started_at)
    include (membership_id, ended_at, kind)`.execute(db);
  await sql`create index activity_intervals_member_start_idx on activity_intervals (membership_id, started_at)
    include (ended_at, kind)`.execute(db);

  // Logins: `ended_at` null while the session is open.
  await db.schema
    .createTable('logins')
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedByDefaultAsIdentity())
    .addColumn('org_id', 'uuid', orgColumn)
    .addColumn('membership_id', 'uuid', (c) => c.notNull().references('memberships.id').onDelete('cascade'))
    .addColumn('started_at', 'timestamptz', (c) => c.notNull())
    .addColumn('ended_at', 'timestamptz')
    .addColumn('ip', sql`inet`, (c) => c.notNull())
    .addColumn('user_agent', 'text')
    .addCheckConstraint('logins_end_after_start', sql`ended_at is null or ended_at >= started_at`)
    .execute();
  await db.schema.createIndex('logins_org_start_idx').on('logins').columns(['org_id', 'started_at', 'id']).execute();
  await db.schema.createIndex('logins_member_start_idx').on('logins').columns(['membership_id', 'started_at', 'id']).execute();

  // Quiz attempts (numbered per learner and lesson) and their answers.
  await db.schema
    .createTable('quiz_attempts')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('org_id', 'uuid', orgColumn)
    .addColumn('membership_id', 'uuid', (c) => c.notNull())
    .addColumn('programme_id', 'uuid', (c) => c.notNull())
    .addColumn('lesson_id', 'uuid', (c) => c.notNull())
    .addColumn('attempt_no', 'integer', (c) => c.notNull().check(sql`attempt_no >= 1`))
    .addColumn('score', 'integer', (c) => c.notNull().check(sql`score between 0 and 100`))
    .addColumn('passed', 'boolean', (c) => c.notNull())
    .addColumn('completed_at', 'timestamptz', (c) => c.notNull())
    .addUniqueConstraint('quiz_attempts_member_lesson_attempt_key', ['membership_id', 'lesson_id', 'attempt_no'])
    .addForeignKeyConstraint(
      'quiz_attempts_enrolment_fkey',
      ['membership_id', 'programme_id'],
      'programme_enrolments',
      ['membership_id', 'programme_id'],
      (c) => c.onDelete('cascade'),
    )
    .addForeignKeyConstraint('quiz_attempts_lesson_fkey', ['lesson_id', 'programme_id'], 'lessons', ['id', 'programme_id'], (c) =>
      c.onDelete('cascade'),
    )
    .execute();
  // Order of evaluations and quiz-answers: Paris attempt date, attempt number, the attempt.
  const attemptDay = `((completed_at at time zone 'Europe/Paris')::date)`;
  await sql.raw(`create index quiz_attempts_org_order_idx on quiz_attempts (org_id, ${attemptDay}, attempt_no, id)`).execute(db);
  await sql
    .raw(`create index quiz_attempts_programme_order_idx on quiz_attempts (programme_id, ${attemptDay}, attempt_no, id)`)
    .execute(db);
  await sql.raw(`create index quiz_attempts_member_order_idx on quiz_attempts (membership_id, ${attemptDay}, attempt_no, id)`).execute(db);

  await db.schema
    .createTable('quiz_answers')
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedByDefaultAsIdentity())
    .addColumn('org_id', 'uuid', orgColumn)
    .addColumn('attempt_id', 'uuid', (c) => c.notNull().references('quiz_attempts.id').onDelete('cascade'))
    .addColumn('question_id', 'uuid', (c) => c.notNull().references('quiz_questions.id').onDelete('cascade'))
    // Order of the question in the quiz, copied from the question so pages need no join to order.
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('chosen_option', 'text', (c) => c.notNull())
    .addColumn('is_correct', 'boolean', (c) => c.notNull())
    .addColumn('answered_at', 'timestamptz', (c) => c.notNull())
    .addUniqueConstraint('quiz_answers_attempt_question_key', ['attempt_id', 'question_id'])
    .execute();
  await db.schema.createIndex('quiz_answers_attempt_order_idx').on('quiz_answers').columns(['attempt_id', 'position', 'id']).execute();

  // Issued documents: a PIF (estimated hours) or a certificate (measured hours, completion score),
  // always for a programme the learner is enrolled in; at most one certificate per enrolment.
  await db.schema
    .createTable('documents')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('org_id', 'uuid', orgColumn)
    .addColumn('membership_id', 'uuid', (c) => c.notNull())
    .addColumn('programme_id', 'uuid', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull().check(sql`type in ('PIF', 'Attestation')`))
    .addColumn('issued_at', 'timestamptz', (c) => c.notNull())
    .addColumn('hours', sql`numeric(6, 1)`, (c) => c.notNull().check(sql`hours >= 0`))
    .addColumn('completion_score', 'integer', (c) => c.check(sql`completion_score between 0 and 100`))
    .addForeignKeyConstraint(
      'documents_enrolment_fkey',
      ['membership_id', 'programme_id'],
      'programme_enrolments',
      ['membership_id', 'programme_id'],
      (c) => c.onDelete('cascade'),
    )
    .addCheckConstraint('documents_score_of_certificates', sql`(type = 'Attestation') = (completion_score is not null)`)
    .execute();
  await db.schema.createIndex('documents_org_issued_idx').on('documents').columns(['org_id', 'issued_at', 'id']).execute();
  await db.schema.createIndex('documents_member_issued_idx').on('documents').columns(['membership_id', 'issued_at', 'id']).execute();
  await sql`create unique index documents_one_certificate_per_enrolment on documents (membership_id, programme_id)
    where type = 'Attestation'`.execute(db);

  await db.schema
    .createTable('satisfaction_surveys')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('org_id', 'uuid', orgColumn)
    .addColumn('membership_id', 'uuid', (c) => c.notNull())
    .addColumn('programme_id', 'uuid', (c) => c.notNull())
    .addColumn('rating', 'integer', (c) => c.notNull().check(sql`rating between 1 and 5`))
    .addColumn('nps', 'integer', (c) => c.notNull().check(sql`nps between 0 and 10`))
    .addColumn('verbatim', 'text')
    .addColumn('answered_at', 'timestamptz', (c) => c.notNull())
    .addForeignKeyConstraint(
      'satisfaction_surveys_enrolment_fkey',
      ['membership_id', 'programme_id'],
      'programme_enrolments',
      ['membership_id', 'programme_id'],
      (c) => c.onDelete('cascade'),
    )
    .execute();
  await db.schema
    .createIndex('satisfaction_surveys_org_answered_idx')
    .on('satisfaction_surveys')
    .columns(['org_id', 'answered_at', 'id'])
    .execute();
  await db.schema
    .createIndex('satisfaction_surveys_member_answered_idx')
    .on('satisfaction_surveys')
    .columns(['membership_id', 'answered_at', 'id'])
    .execute();

  // A rating of a tutoring session and its trainer; `session_rating` is null for legacy imports.
  await db.schema
    .createTable('tutoring_ratings')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('org_id', 'uuid', orgColumn)
    .addColumn('membership_id', 'uuid', (c) => c.notNull().references('memberships.id').onDelete('cascade'))
    .addColumn('session_id', 'uuid', (c) => c.notNull().references('tutoring_sessions.id').onDelete('cascade'))
    .addColumn('session_rating', 'integer', (c) => c.check(sql`session_rating between 1 and 5`))
    .addColumn('trainer_rating', 'integer', (c) => c.notNull().check(sql`trainer_rating between 1 and 5`))
    .addColumn('comment', 'text')
    .addColumn('submitted_at', 'timestamptz', (c) => c.notNull())
    .addUniqueConstraint('tutoring_ratings_session_member_key', ['session_id', 'membership_id'])
    .execute();
  await db.schema
    .createIndex('tutoring_ratings_org_submitted_idx')
    .on('tutoring_ratings')
    .columns(['org_id', 'submitted_at', 'id'])
    .execute();
  await db.schema
    .createIndex('tutoring_ratings_member_submitted_idx')
    .on('tutoring_ratings')
    .columns(['membership_id', 'submitted_at', 'id'])
    .execute();

  await db.schema
    .createTable('lesson_ratings')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('org_id', 'uuid', orgColumn)
    .addColumn('membership_id', 'uuid', (c) => c.notNull())
    .addColumn('programme_id', 'uuid', (c) => c.notNull())
    .addColumn('lesson_id', 'uuid', (c) => c.notNull())
    .addColumn('rating', 'integer', (c) => c.notNull().check(sql`rating between 1 and 5`))
    .addColumn('comment', 'text')
    .addColumn('submitted_at', 'timestamptz', (c) => c.notNull())
    .addUniqueConstraint('lesson_ratings_member_lesson_key', ['membership_id', 'lesson_id'])
    .addForeignKeyConstraint(
      'lesson_ratings_enrolment_fkey',
      ['membership_id', 'programme_id'],
      'programme_enrolments',
      ['membership_id', 'programme_id'],
      (c) => c.onDelete('cascade'),
    )
    .addForeignKeyConstraint('lesson_ratings_lesson_fkey', ['lesson_id', 'programme_id'], 'lessons', ['id', 'programme_id'], (c) =>
      c.onDelete('cascade'),
    )
    .execute();
  await db.schema.createIndex('lesson_ratings_org_submitted_idx').on('lesson_ratings').columns(['org_id', 'submitted_at', 'id']).execute();
  await db.schema
    .createIndex('lesson_ratings_member_submitted_idx')
    .on('lesson_ratings')
    .columns(['membership_id', 'submitted_at', 'id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    'lesson_ratings',
    'tutoring_ratings',
    'satisfaction_surveys',
    'documents',
    'quiz_answers',
    'quiz_attempts',
    'logins',
    'activity_intervals',
    'tutoring_attendance',
    'tutoring_sessions',
    'lesson_progress',
    'quiz_questions',
    'lessons',
    'modules',
    'courses',
  ]) {
    await db.schema.dropTable(table).ifExists().execute();
  }
  await sql`drop function if exists refresh_enrolment_progress()`.execute(db);
  await sql`drop index if exists programme_enrolments_org_natural_idx`.execute(db);
  await sql`drop index if exists programme_enrolments_programme_natural_idx`.execute(db);
  await db.schema
    .alterTable('programme_enrolments')
    .dropColumn('lessons_viewed')
    .dropColumn('first_visit_at')
    .dropColumn('last_visit_at')
    .execute();
}
