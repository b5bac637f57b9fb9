import { type Kysely, sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new one.
// quiz_answers carries the rest of what `quiz-answers` shows of its attempt (its lesson, score and
// verdict), copied as its learner, programme, number and day already are: a page or an export reads
// the organisation's answers and its catalogue, not the attempts beside them. Joined to the
// attempts, an export's plan depended on how much of the table the organisation held: alone a hash
// of its attempts, beside others a probe into the attempts for every answer. Its references to the
// learner, programme and lesson become foreign keys within the organisation, which PostgreSQL sizes
// its joins from (see 20261128T0100-organisation-foreign-keys).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table quiz_answers add column lesson_id uuid, add column attempt_score integer, add column attempt_passed boolean`.execute(
    db,
  );
  await sql`update quiz_answers ans set lesson_id = qa.lesson_id, attempt_score = qa.score, attempt_passed = qa.passed
    from quiz_attempts qa where qa.id = ans.attempt_id`.execute(db);
  await sql`alter table quiz_answers alter column lesson_id set not null, alter column attempt_score set not null,
    alter column attempt_passed set not null`.execute(db);
  // The learner, programme and lesson are joined within the organisation: foreign keys, for their size.
  for (const [column, to] of [
    ['membership_id', 'memberships'],
    ['programme_id', 'programmes'],
    ['lesson_id', 'lessons'],
  ]) {
    await sql
      .raw(`alter table quiz_answers add constraint quiz_answers_org_${column.replace(/_id$/, '')}_fkey
        foreign key (org_id, ${column}) references ${to} (org_id, id) on delete cascade`)
      .execute(db);
  }
  // An export reads the organisation's answers of the year in order from this index alone (the
  // visibility map permitting): a range of one organisation's entries, which PostgreSQL prefers to
  // a scan of every organisation's rows whatever their share of the table, where reaching each row
  // in the table made the sequential scan look cheaper once the organisation was a minority.
  await sql`drop index quiz_answers_org_order_idx`.execute(db);
  await sql`create index quiz_answers_org_order_idx on quiz_answers (org_id, attempt_day, attempt_no, attempt_id, position, id)
    include (question_id, membership_id, programme_id, lesson_id, chosen_option, is_correct, answered_at, attempt_score, attempt_passed)`.execute(
    db,
  );

  await sql`create or replace function quiz_answers_copy_attempt() returns trigger language plpgsql as $$
    begin
      select qa.membership_id, qa.programme_id, qa.attempt_no, qa.completed_day, qa.lesson_id, qa.score, qa.passed
        into new.membership_id, new.programme_id, new.attempt_no, new.attempt_day, new.lesson_id, new.attempt_score, new.attempt_passed
        from quiz_attempts qa where qa.id = new.attempt_id;
      return new;
    end $$`.execute(db);
  await sql`create or replace function quiz_attempts_propagate() returns trigger language plpgsql as $$
    begin
      update quiz_answers set membership_id = new.membership_id, programme_id = new.programme_id, attempt_no = new.attempt_no,
        attempt_day = new.completed_day, lesson_id = new.lesson_id, attempt_score = new.score, attempt_passed = new.passed
      where attempt_id = new.id;
      return null;
    end $$`.execute(db);
  await sql`drop trigger quiz_attempts_propagate on quiz_attempts`.execute(db);
  await sql`create trigger quiz_attempts_propagate
    after update of membership_id, programme_id, attempt_no, completed_at, lesson_id, score, passed on quiz_attempts
    for each row execute function quiz_attempts_propagate()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index quiz_answers_org_order_idx`.execute(db);
  await sql`create index quiz_answers_org_order_idx on quiz_answers (org_id, attempt_day, attempt_no, attempt_id, position, id)`.execute(
    db,
  );
  await sql`drop trigger quiz_attempts_propagate on quiz_attempts`.execute(db);
  await sql`create trigger quiz_attempts_propagate after update of membership_id, programme_id, attempt_no, completed_at on quiz_attempts
    for each row execute function quiz_attempts_propagate()`.execute(db);
  await sql`create or replace function quiz_attempts_propagate() returns trigger language plpgsql as $$
    begin
      update quiz_answers set membership_id = new.membership_id, programme_id = new.programme_id, attempt_no = new.attempt_no,
        attempt_day = new.completed_day
      where attempt_id = new.id;
      return null;
    end $$`.execute(db);
  await sql`create or replace function quiz_answers_copy_attempt() returns trigger language plpgsql as $$
    begin
      select qa.membership_id, qa.programme_id, qa.attempt_no, qa.completed_day
        into new.membership_id, new.programme_id, new.attempt_no, new.attempt_day
        from quiz_attempts qa where qa.id = new.attempt_id;
      return new;
    end $$`.execute(db);
  for (const name of ['membership', 'programme'])
    await sql.raw(`alter table quiz_answers drop constraint quiz_answers_org_${name}_fkey`).execute(db);
  await sql`alter table quiz_answers drop column lesson_id, drop column attempt_score, drop column attempt_passed`.execute(db);
}
