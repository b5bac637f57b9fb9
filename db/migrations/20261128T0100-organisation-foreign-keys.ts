import { type Kysely, sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new one.
// A row reaches the rows it names (its learner, programme, lesson, session, attempt...) within its
// organisation: the queries join on the key and on the organisation, and these foreign keys say so
// to PostgreSQL. Each table named by key gets a unique (org_id, id), and each reference is
// (org_id, key), replacing the reference by key alone where there was one (same deletes).
// PostgreSQL estimates a join that follows a foreign key from the foreign key (each row finds one),
// and divides out the organisation's condition it already counted on the referencing side. Without
// them it took the organisation's condition on both sides for independent filters: every join
// divided its estimate by the number of organisations, down to one row, and a plan built for one
// row (a nested loop over a whole catalogue per answer) ran for every row of an export.

/** The tables named by key within an organisation: their unique (org_id, id). */
const referenced = [
  'memberships',
  'programmes',
  'courses',
  'modules',
  'lessons',
  'quiz_questions',
  'quiz_attempts',
  'tutoring_sessions',
  'programme_enrolments',
];

/** Each reference (table, its key column, the table it names), and the reference by key alone it replaces. */
const references: { table: string; column: string; to: string; replaces?: string }[] = [
  { table: 'logins', column: 'membership_id', to: 'memberships', replaces: 'logins_membership_id_fkey' },
  { table: 'documents', column: 'membership_id', to: 'memberships' },
  { table: 'documents', column: 'programme_id', to: 'programmes' },
  { table: 'satisfaction_surveys', column: 'membership_id', to: 'memberships' },
  { table: 'satisfaction_surveys', column: 'programme_id', to: 'programmes' },
  { table: 'tutoring_attendance', column: 'membership_id', to: 'memberships', replaces: 'tutoring_attendance_membership_id_fkey' },
  { table: 'tutoring_attendance', column: 'session_id', to: 'tutoring_sessions', replaces: 'tutoring_attendance_session_id_fkey' },
  { table: 'tutoring_ratings', column: 'membership_id', to: 'memberships', replaces: 'tutoring_ratings_membership_id_fkey' },
  { table: 'tutoring_ratings', column: 'session_id', to: 'tutoring_sessions', replaces: 'tutoring_ratings_session_id_fkey' },
  { table: 'quiz_attempts', column: 'membership_id', to: 'memberships' },
  { table: 'quiz_attempts', column: 'programme_id', to: 'programmes' },
  { table: 'quiz_attempts', column: 'lesson_id', to: 'lessons' },
  { table: 'lesson_ratings', column: 'membership_id', to: 'memberships' },
  { table: 'lesson_ratings', column: 'programme_id', to: 'programmes' },
  { table: 'lesson_ratings', column: 'lesson_id', to: 'lessons' },
  { table: 'quiz_answers', column: 'attempt_id', to: 'quiz_attempts', replaces: 'quiz_answers_attempt_id_fkey' },
  { table: 'quiz_answers', column: 'question_id', to: 'quiz_questions', replaces: 'quiz_answers_question_id_fkey' },
  { table: 'enrolment_years', column: 'enrolment_id', to: 'programme_enrolments', replaces: 'enrolment_years_enrolment_id_fkey' },
  { table: 'enrolment_years', column: 'membership_id', to: 'memberships' },
  { table: 'enrolment_years', column: 'programme_id', to: 'programmes' },
  { table: 'lesson_progress_years', column: 'membership_id', to: 'memberships' },
  { table: 'lesson_progress_years', column: 'lesson_id', to: 'lessons', replaces: 'lesson_progress_years_lesson_id_fkey' },
  { table: 'lessons', column: 'module_id', to: 'modules', replaces: 'lessons_module_id_fkey' },
  { table: 'lessons', column: 'programme_id', to: 'programmes', replaces: 'lessons_programme_id_fkey' },
];

const constraintName = (table: string, column: string) => `${table}_org_${column.replace(/_id$/, '')}_fkey`;

export async function up(db: Kysely<any>): Promise<void> {
  for (const table of referenced) {
    await sql.raw(`alter table ${table} add constraint ${table}_org_id_key unique (org_id, id)`).execute(db);
  }
  for (const { table, column, to, replaces } of references) {
    if (replaces) await sql.raw(`alter table ${table} drop constraint ${replaces}`).execute(db);
    await sql
      .raw(`alter table ${table} add constraint ${constraintName(table, column)}
        foreign key (org_id, ${column}) references ${to} (org_id, id) on delete cascade`)
      .execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const { table, column, to, replaces } of [...references].reverse()) {
    await sql.raw(`alter table ${table} drop constraint ${constraintName(table, column)}`).execute(db);
    if (replaces) {
      await sql
        .raw(`alter table ${table} add constraint ${replaces} foreign key (${column}) references ${to} (id) on delete cascade`)
        .execute(db);
    }
  }
  for (const table of [...referenced].reverse()) await sql.raw(`alter table ${table} drop constraint ${table}_org_id_key`).execute(db);
}
