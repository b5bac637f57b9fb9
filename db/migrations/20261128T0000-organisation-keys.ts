import { type Kysely, sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new one.
// Every organisation-scoped read is bounded by its organisation's rows: it finds, orders and counts
// them on one index that starts with the organisation, and reaches other tables only by key, with
// the organisation's condition on each. What that needs, kept by triggers whoever writes:
// - memberships carry their account's email and name: `users` and `learners` are ordered by email,
//   and every resource shows both; the accounts table, shared by every organisation, is no longer
//   read by any organisation's request;
// - tutoring_attendance carries its session's start, title and programme, and its learner's email
//   (the order of `attendance`): the rows of a year are found, ordered and counted on one index, not
//   through a join whose size the planner would take for a share of every organisation's sessions;
// - a page finds its rows by key in the organisation's range of the keys (an index on org_id and the
//   key), not in the whole platform's: random keys are as many leaf pages of a platform-wide primary
//   key as there are rows on the page;
// - lesson_progress gets an index on the organisation back.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table memberships add column email text, add column name text`.execute(db);
  await sql`update memberships m set email = a.email, name = a.name from accounts a where a.id = m.account_id`.execute(db);
  await sql`alter table memberships alter column email set not null`.execute(db);
  await sql`create function memberships_copy_account() returns trigger language plpgsql as $$
    begin
      select a.email, a.name into new.email, new.name from accounts a where a.id = new.account_id;
      return new;
    end $$`.execute(db);
  await sql`create trigger memberships_copy_account before insert or update of account_id, email, name on memberships
    for each row execute function memberships_copy_account()`.execute(db);
  await sql`create function accounts_propagate_identity() returns trigger language plpgsql as $$
    begin
      update memberships set email = new.email, name = new.name where account_id = new.id;
      return null;
    end $$`.execute(db);
  await sql`create trigger accounts_propagate_identity after update of email, name on accounts
    for each row when (old.email is distinct from new.email or old.name is distinct from new.name)
    execute function accounts_propagate_identity()`.execute(db);
  // `learners`: the members in email order, with what the page shows of them, from the index alone.
  await sql`create index memberships_org_email_idx on memberships (org_id, email) include (id, name, invited_at, joined_at)`.execute(db);
  // `users`: enrolment day, then email.
  await sql`drop index memberships_org_listing_idx`.execute(db);
  await sql`create index memberships_org_listing_idx on memberships
    (org_id, ((coalesce(joined_at, invited_at) at time zone 'Europe/Paris')::date), email)`.execute(db);
  // `learners` keeps the members of a year by the earlier of their two dates: statistics on that
  // expression, without which the planner takes a third of them.
  await sql`create statistics memberships_member_since on (least(invited_at, joined_at)) from memberships`.execute(db);

  await sql`alter table tutoring_attendance add column session_starts_at timestamptz, add column session_title text,
    add column session_programme_id uuid, add column email text`.execute(db);
  // Copies of what exists already: no fact of the year slices changes, so their refresh stays off.
  await sql`alter table tutoring_attendance disable trigger tutoring_attendance_enrolment_years_update`.execute(db);
  await sql`update tutoring_attendance ta set session_starts_at = ts.starts_at, session_title = ts.title,
      session_programme_id = ts.programme_id, email = m.email
    from tutoring_sessions ts, memberships m where ts.id = ta.session_id and m.id = ta.membership_id`.execute(db);
  await sql`alter table tutoring_attendance enable trigger tutoring_attendance_enrolment_years_update`.execute(db);
  await sql`alter table tutoring_attendance alter column session_starts_at set not null, alter column session_title set not null,
    alter column email set not null`.execute(db);
  await sql`create function tutoring_attendance_copy_keys() returns trigger language plpgsql as $$
    begin
      select ts.starts_at, ts.title, ts.programme_id into new.session_starts_at, new.session_title, new.session_programme_id
        from tutoring_sessions ts where ts.id = new.session_id;
      select m.email into new.email from memberships m where m.id = new.membership_id;
      return new;
    end $$`.execute(db);
  await sql`create trigger tutoring_attendance_copy_keys
    before insert or update of session_id, membership_id, session_starts_at, session_title, session_programme_id, email
    on tutoring_attendance for each row execute function tutoring_attendance_copy_keys()`.execute(db);
  await sql`create function tutoring_sessions_propagate_keys() returns trigger language plpgsql as $$
    begin
      update tutoring_attendance set session_starts_at = new.starts_at, session_title = new.title, session_programme_id = new.programme_id
        where session_id = new.id;
      return null;
    end $$`.execute(db);
  await sql`create trigger tutoring_sessions_propagate_keys after update of starts_at, title, programme_id on tutoring_sessions
    for each row when ((old.starts_at, old.title, old.programme_id) is distinct from (new.starts_at, new.title, new.programme_id))
    execute function tutoring_sessions_propagate_keys()`.execute(db);
  await sql`create function memberships_propagate_email() returns trigger language plpgsql as $$
    begin
      update tutoring_attendance set email = new.email where membership_id = new.id;
      return null;
    end $$`.execute(db);
  await sql`create trigger memberships_propagate_email after update of email on memberships
    for each row when (old.email is distinct from new.email) execute function memberships_propagate_email()`.execute(db);
  await sql`create index tutoring_attendance_org_order_idx on tutoring_attendance
    (org_id, session_starts_at, session_title, session_id, email)`.execute(db);
  await sql`drop index tutoring_attendance_org_idx`.execute(db);

  for (const [table, key] of [
    ['logins', 'id'],
    ['quiz_answers', 'id'],
    ['documents', 'id'],
    ['satisfaction_surveys', 'id'],
    ['tutoring_attendance', 'id'],
    ['tutoring_ratings', 'id'],
    ['lesson_ratings', 'id'],
    ['enrolment_years', 'enrolment_id'],
  ]) {
    await sql.raw(`create index ${table}_org_key_idx on ${table} (org_id, ${key})`).execute(db);
  }
  await sql`create index lesson_progress_org_idx on lesson_progress (org_id, membership_id, lesson_id) include (viewed_at)`.execute(db);
  // `progress` reads a year's rows of the organisation, lesson by lesson, from this index alone.
  await sql`drop index lesson_progress_years_org_idx`.execute(db);
  await sql`create index lesson_progress_years_org_idx on lesson_progress_years (org_id, year, lesson_id)
    include (membership_id, programme_id, last_visit_at, visits, active_minutes)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index lesson_progress_years_org_idx`.execute(db);
  await sql`create index lesson_progress_years_org_idx on lesson_progress_years (org_id, year, lesson_id) include (membership_id, last_visit_at)`.execute(
    db,
  );
  await sql`drop index lesson_progress_org_idx`.execute(db);
  for (const table of [
    'logins',
    'quiz_answers',
    'documents',
    'satisfaction_surveys',
    'tutoring_attendance',
    'tutoring_ratings',
    'lesson_ratings',
    'enrolment_years',
  ]) {
    await sql.raw(`drop index ${table}_org_key_idx`).execute(db);
  }
  await sql`create index tutoring_attendance_org_idx on tutoring_attendance (org_id, session_id)`.execute(db);
  await sql`drop trigger memberships_propagate_email on memberships`.execute(db);
  await sql`drop function memberships_propagate_email()`.execute(db);
  await sql`drop trigger tutoring_sessions_propagate_keys on tutoring_sessions`.execute(db);
  await sql`drop function tutoring_sessions_propagate_keys()`.execute(db);
  await sql`drop trigger tutoring_attendance_copy_keys on tutoring_attendance`.execute(db);
  await sql`drop function tutoring_attendance_copy_keys()`.execute(db);
  await sql`alter table tutoring_attendance drop column session_starts_at, drop column session_title, drop column session_programme_id,
    drop column email`.execute(db);
  await sql`drop statistics memberships_member_since`.execute(db);
  await sql`drop index memberships_org_listing_idx`.execute(db);
  await sql`create index memberships_org_listing_idx on memberships
    (org_id, ((coalesce(joined_at, invited_at) at time zone 'Europe/Paris')::date), account_id)`.execute(db);
  await sql`drop index memberships_org_email_idx`.execute(db);
  await sql`drop trigger accounts_propagate_identity on accounts`.execute(db);
  await sql`drop function accounts_propagate_identity()`.execute(db);
  await sql`drop trigger memberships_copy_account on memberships`.execute(db);
  await sql`drop function memberships_copy_account()`.execute(db);
  await sql`alter table memberships drop column email, drop column name`.execute(db);
}
