import { type Kysely, sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new one.
// A year is a period (DECISIONS, "A year is a period"): `progress` and `enrollments` of year Y show
// what happened in Y and the state reached by 31 December of Y, not the latest state filed under
// the latest date. Two tables hold those year slices, derived from the facts and kept exact by
// statement triggers in the transaction that writes the facts (bulk loads that skip triggers call
// the recount functions once they are done):
// - lesson_progress_years: one row per learner, lesson and Paris year with activity on the lesson:
//   the visits opened in the year, the minutes of the year (course intervals cut at midnight on
//   31 December, in whole minutes as `learners.temps_actif_min` counts them) and the last visit;
// - enrolment_years: one row per enrolment and Paris year in which it is active (enrolled that
//   year, or any lesson time, quiz attempt, tutoring session or document of the programme that
//   year), with its state at the end of the year: lessons viewed, last activity, last visit.
// The facts gain what the slices need: the interval that opens each lesson visit, and the instant
// a lesson became viewed. `progress` then pages on year rows counted per day and month; the old
// counts of lesson_progress, and the columns and indexes kept for them, go.

/** The Paris year of an instant, and the instant a Paris year begins: one definition for SQL. */
const yearFunctions = `
  create function paris_year(at timestamptz) returns integer language sql immutable parallel safe
    as $$ select extract(year from (at at time zone 'Europe/Paris'))::integer $$;
  create function paris_year_start(year integer) returns timestamptz language sql immutable parallel safe
    as $$ select make_date(year, 1, 1)::timestamp at time zone 'Europe/Paris' $$;`;

/**
 * The year rows of the course intervals of `intervals` (a query over activity_intervals). An
 * interval lasts at most a day, so it touches one year or two. Its minutes in a year are counted
 * between whole minutes, clipped to the year: the unit of `learners.temps_actif_min`, so that a
 * learner's course minutes never exceed their active minutes. A visit belongs to the year it was
 * opened in; a year that only holds the end of a visit opened the year before dates its row on
 * 1 January at midnight (`last_visit_at`).
 */
const lessonYearRows = (intervals: string) => `
  select ai.org_id, ai.membership_id, ai.programme_id, ai.lesson_id, y.year,
    (count(*) filter (where ai.opens_visit and ai.started_at >= y.starts))::int as visits,
    coalesce(sum(greatest(extract(epoch from
      date_trunc('minute', least(ai.ended_at, y.ends)) - date_trunc('minute', greatest(ai.started_at, y.starts))) / 60, 0)), 0)::int as active_minutes,
    coalesce(max(ai.started_at) filter (where ai.opens_visit and ai.started_at >= y.starts), y.starts) as last_visit_at
  from (${intervals}) ai
  join programme_enrolments pe on pe.membership_id = ai.membership_id and pe.programme_id = ai.programme_id
  cross join lateral (
    select n as year, paris_year_start(n) as starts, paris_year_start(n + 1) as ends
    from generate_series(paris_year(ai.started_at), paris_year(ai.ended_at)) n
  ) y
  where ai.kind = 'cours' and ai.lesson_id is not null
  group by ai.org_id, ai.membership_id, ai.programme_id, ai.lesson_id, y.year, y.starts
  having count(*) filter (where ai.opens_visit and ai.started_at >= y.starts) > 0
    or sum(extract(epoch from date_trunc('minute', least(ai.ended_at, y.ends)) - date_trunc('minute', greatest(ai.started_at, y.starts)))) > 0`;

/**
 * The year rows of the enrolments of `enrolments` (a query over programme_enrolments). Facts are
 * the instants of activity on the programme, each in its Paris year; every value of a year is
 * cumulative up to the end of that year. A year gets a row when it is the enrolment's year or
 * holds activity, and is not before the enrolment's year.
 */
const enrolmentYearRows = (enrolments: string) => `
  with enrolments as (${enrolments}),
  facts as (
    select e.id as enrolment_id, lpy.year, lpy.last_visit_at as activity_at,
      case when lpy.visits > 0 then lpy.last_visit_at end as visit_at, 0 as viewed
    from enrolments e join lesson_progress_years lpy on lpy.membership_id = e.membership_id and lpy.programme_id = e.programme_id
    union all
    select e.id, paris_year(lp.viewed_at), null, null, 1
    from enrolments e join lesson_progress lp on lp.membership_id = e.membership_id and lp.programme_id = e.programme_id
    where lp.viewed_at is not null
    union all
    select e.id, paris_year(qa.completed_at), qa.completed_at, null, 0
    from enrolments e join quiz_attempts qa on qa.membership_id = e.membership_id and qa.programme_id = e.programme_id
    union all
    select e.id, paris_year(ts.starts_at), ts.starts_at, null, 0
    from enrolments e join tutoring_attendance ta on ta.membership_id = e.membership_id
    join tutoring_sessions ts on ts.id = ta.session_id and ts.programme_id = e.programme_id
    union all
    select e.id, paris_year(d.issued_at), d.issued_at, null, 0
    from enrolments e join documents d on d.membership_id = e.membership_id and d.programme_id = e.programme_id
    union all
    -- The enrolment's own year, active by the enrolment alone.
    select e.id, paris_year(e.enrolled_at), null, null, 0 from enrolments e
  ),
  per_year as (
    select enrolment_id, year, max(activity_at) as last_activity_at, max(visit_at) as last_visit_at, sum(viewed)::int as viewed,
      bool_or(activity_at is not null) as active
    from facts group by enrolment_id, year
  ),
  cumulative as (
    select py.enrolment_id, py.year, py.active,
      max(py.last_activity_at) over running as last_activity_at,
      max(py.last_visit_at) over running as last_visit_at,
      (sum(py.viewed) over running)::int as lessons_viewed
    from per_year py
    window running as (partition by py.enrolment_id order by py.year rows between unbounded preceding and current row)
  )
  select e.id as enrolment_id, c.year, e.org_id, e.membership_id, e.programme_id,
    coalesce(c.last_activity_at, e.enrolled_at) as natural_at, c.last_activity_at, c.last_visit_at, c.lessons_viewed
  from cumulative c join enrolments e on e.id = c.enrolment_id
  where c.year >= paris_year(e.enrolled_at) and (c.year = paris_year(e.enrolled_at) or c.active)`;

/**
 * Serialises the refreshes of one enrolment: its row is locked, in id order, before reading, so a
 * refresh never writes values computed without another transaction's facts. Writers lock the
 * enrolment before they write its facts (db/activity.ts does): a writer that does not may deadlock
 * with another one, which PostgreSQL detects by aborting one of them, with nothing half-written.
 */
const lockEnrolments = (ids: string) => `perform 1 from programme_enrolments where id in (${ids}) order by id for no key update;`;

export async function up(db: Kysely<any>): Promise<void> {
  await sql.raw(yearFunctions).execute(db);

  // The instant a lesson became viewed: the start of the visit in which it was. Rows already there
  // take their first visit.
  await sql`alter table lesson_progress add column viewed_at timestamptz`.execute(db);
  await sql`update lesson_progress set viewed_at = first_visit_at where viewed`.execute(db);
  await sql`alter table lesson_progress add constraint lesson_progress_viewed_at
    check (viewed = (viewed_at is not null) and (viewed_at is null or viewed_at >= first_visit_at))`.execute(db);

  // The course interval that opens a lesson visit (a visit is one or more stretches of activity).
  // Intervals already there: the first of each learner's lesson, then those after the longest
  // pauses, as many as lesson_progress counted visits.
  await sql`alter table activity_intervals add column opens_visit boolean not null default false`.execute(db);
  await sql`alter table activity_intervals add constraint activity_intervals_visit_of_course check (not opens_visit or kind = 'cours')`.execute(
    db,
  );
  await sql`with ordered as (
      select ai.id, ai.membership_id, ai.lesson_id,
        ai.started_at - lag(ai.ended_at) over (partition by ai.membership_id, ai.lesson_id order by ai.started_at, ai.id) as pause
      from activity_intervals ai where ai.kind = 'cours' and ai.lesson_id is not null
    ), ranked as (
      select o.id, row_number() over (partition by o.membership_id, o.lesson_id order by o.pause desc nulls first, o.id) as rank,
        greatest(coalesce(lp.visits, 1), 1) as visits
      from ordered o left join lesson_progress lp on lp.membership_id = o.membership_id and lp.lesson_id = o.lesson_id
    )
    update activity_intervals ai set opens_visit = true from ranked r where r.id = ai.id and r.rank <= r.visits`.execute(db);

  // What only the old `progress` counts needed.
  for (const event of ['insert', 'update', 'delete']) {
    await sql.raw(`drop trigger lesson_progress_counts_${event} on lesson_progress`).execute(db);
    await sql.raw(`drop function lesson_progress_counts_${event}()`).execute(db);
  }
  await sql`drop function lesson_progress_counts_recount(uuid)`.execute(db);
  await sql`drop table lesson_progress_days`.execute(db);
  await sql`drop table lesson_progress_months`.execute(db);
  await sql`drop trigger lesson_progress_copy_enrolment on lesson_progress`.execute(db);
  await sql`drop function lesson_progress_copy_enrolment()`.execute(db);
  await sql`drop trigger programme_enrolments_propagate on programme_enrolments`.execute(db);
  await sql`drop function programme_enrolments_propagate()`.execute(db);
  await sql`alter table lesson_progress drop column enrolled_at`.execute(db);
  await sql`drop index programme_enrolments_org_natural_idx`.execute(db);
  await sql`drop index programme_enrolments_programme_natural_idx`.execute(db);

  // ---------------------------------------------------------------------------------------------
  // Lesson years, from the course intervals.
  await sql`create table lesson_progress_years (
    org_id uuid not null references organisations (id) on delete cascade,
    membership_id uuid not null,
    programme_id uuid not null,
    lesson_id uuid not null references lessons (id) on delete cascade,
    year integer not null,
    visits integer not null check (visits >= 0),
    active_minutes integer not null check (active_minutes >= 0),
    last_visit_at timestamptz not null,
    primary key (membership_id, lesson_id, year),
    foreign key (membership_id, programme_id) references programme_enrolments (membership_id, programme_id) on delete cascade,
    check (paris_year(last_visit_at) = year)
  )`.execute(db);
  // `progress` of the organisation: a year's rows of one lesson; of one learner: their year.
  await sql`create index lesson_progress_years_org_idx on lesson_progress_years (org_id, year, lesson_id) include (membership_id, last_visit_at)`.execute(
    db,
  );
  await sql`create index lesson_progress_years_enrolment_idx on lesson_progress_years (membership_id, programme_id, year)`.execute(db);
  await sql`create index activity_intervals_lesson_idx on activity_intervals (membership_id, lesson_id) where kind = 'cours'`.execute(db);

  // `progress` places each lesson's block of rows from the rows counted per Paris day and month of
  // their last visit (which lies in the row's year): a year is 12 months per lesson, and an
  // `updated_since` in mid-month adds the days up to the next month.
  for (const table of ['lesson_progress_days', 'lesson_progress_months']) {
    await sql
      .raw(`create table ${table} (
      -- No foreign keys: a cascade empties the counts through the trigger below, which drops zero rows.
      org_id uuid not null,
      programme_id uuid not null,
      lesson_id uuid not null,
      -- The Paris day, or the first day of the Paris month, of the rows' last visit.
      period date not null,
      progress_rows integer not null,
      primary key (org_id, period, programme_id, lesson_id)
    )`)
      .execute(db);
  }

  /**
   * Applies `changes` (a query of org_id, programme_id, lesson_id, last_visit_at and a sign, +1 for
   * a row that is now, -1 for a row that was) to both counts in one pass per table, keys in their
   * order: every writer locks the counters in the same order, so concurrent writers of the same
   * lessons and days wait for one another instead of deadlocking. Returns common table expressions
   * to follow others in a WITH, the final select into the counters that reached zero, and the
   * statements that drop those.
   */
  const countChanges = (changes: string) => ({
    expressions: `
      day_changes as (
        select org_id, programme_id, lesson_id, (last_visit_at at time zone 'Europe/Paris')::date as day, sum(sign)::int as delta
        from (${changes}) c group by 1, 2, 3, 4 having sum(sign) <> 0
      ), days as (
        insert into lesson_progress_days as t (org_id, programme_id, lesson_id, period, progress_rows)
        select org_id, programme_id, lesson_id, day, delta from day_changes order by org_id, day, programme_id, lesson_id
        on conflict (org_id, period, programme_id, lesson_id) do update set progress_rows = t.progress_rows + excluded.progress_rows
        returning t.org_id, t.period, t.programme_id, t.lesson_id, t.progress_rows
      ), months as (
        insert into lesson_progress_months as t (org_id, programme_id, lesson_id, period, progress_rows)
        select org_id, programme_id, lesson_id, date_trunc('month', day)::date, sum(delta) from day_changes
        group by 1, 2, 3, 4 having sum(delta) <> 0 order by 1, 4, 2, 3
        on conflict (org_id, period, programme_id, lesson_id) do update set progress_rows = t.progress_rows + excluded.progress_rows
        returning t.org_id, t.period, t.programme_id, t.lesson_id, t.progress_rows
      )`,
    select: `
      select array(select row(org_id, period, programme_id, lesson_id)::lesson_count_key from days where progress_rows = 0),
        array(select row(org_id, period, programme_id, lesson_id)::lesson_count_key from months where progress_rows = 0)
      into emptied_days, emptied_months;`,
    dropEmptied: ['lesson_progress_days', 'lesson_progress_months']
      .map(
        (table, i) => `
      delete from ${table} t using unnest(${i === 0 ? 'emptied_days' : 'emptied_months'}) k
        where t.org_id = k.org_id and t.period = k.period and t.programme_id = k.programme_id and t.lesson_id = k.lesson_id and t.progress_rows = 0;`,
      )
      .join(''),
  });
  await sql`create type lesson_count_key as (org_id uuid, period date, programme_id uuid, lesson_id uuid)`.execute(db);

  const lessonYearColumns = 'org_id, membership_id, programme_id, lesson_id, year, visits, active_minutes, last_visit_at';
  // The refresh writes the year rows and adjusts the counts itself, in one pass; a delete that
  // does not come from it (a cascade) adjusts them through the trigger below.
  const refreshCounts = countChanges(`select org_id, programme_id, lesson_id, last_visit_at, 1 as sign from fresh
    union all select org_id, programme_id, lesson_id, last_visit_at, -1 from was`);
  await sql
    .raw(`create function lesson_progress_years_refresh(p_members uuid[], p_lessons uuid[]) returns void language plpgsql as $$
    declare emptied_days lesson_count_key[]; emptied_months lesson_count_key[];
    begin
      ${lockEnrolments(`select pe.id from programme_enrolments pe join lessons l on l.programme_id = pe.programme_id
        join unnest(p_members, p_lessons) k(membership_id, lesson_id) on k.membership_id = pe.membership_id and k.lesson_id = l.id`)}
      perform set_config('partner_api.counting_lesson_years', 'on', true);
      -- The rows of these keys afresh: those that no longer exist go, the others are written when
      -- they changed; the counts move by what is now less what was.
      with fresh as (${lessonYearRows(`select ai.* from activity_intervals ai
          join unnest(p_members, p_lessons) k(membership_id, lesson_id) on k.membership_id = ai.membership_id and k.lesson_id = ai.lesson_id
          where ai.kind = 'cours'`)}),
        was as (
          select t.* from lesson_progress_years t join unnest(p_members, p_lessons) k(membership_id, lesson_id)
            on t.membership_id = k.membership_id and t.lesson_id = k.lesson_id
        ),
        gone as (
          delete from lesson_progress_years t using was
          where t.membership_id = was.membership_id and t.lesson_id = was.lesson_id and t.year = was.year
            and not exists (select 1 from fresh f where f.membership_id = t.membership_id and f.lesson_id = t.lesson_id and f.year = t.year)
        ),
        written as (
          insert into lesson_progress_years as t (${lessonYearColumns}) select ${lessonYearColumns} from fresh order by membership_id, lesson_id, year
          on conflict (membership_id, lesson_id, year) do update
            set visits = excluded.visits, active_minutes = excluded.active_minutes, last_visit_at = excluded.last_visit_at
            where (t.visits, t.active_minutes, t.last_visit_at) is distinct from (excluded.visits, excluded.active_minutes, excluded.last_visit_at)
        ),
        ${refreshCounts.expressions}
      ${refreshCounts.select}
      ${refreshCounts.dropEmptied}
      perform set_config('partner_api.counting_lesson_years', 'off', true);
    end $$`)
    .execute(db);
  const cascadeCounts = countChanges('select org_id, programme_id, lesson_id, last_visit_at, -1 as sign from old_rows');
  await sql
    .raw(`create function lesson_progress_years_uncount() returns trigger language plpgsql as $$
    declare emptied_days lesson_count_key[]; emptied_months lesson_count_key[];
    begin
      if current_setting('partner_api.counting_lesson_years', true) = 'on' then return null; end if;
      with ${cascadeCounts.expressions}
      ${cascadeCounts.select}
      ${cascadeCounts.dropEmptied}
      return null;
    end $$`)
    .execute(db);
  await sql`create trigger lesson_progress_years_uncount after delete on lesson_progress_years
    referencing old table as old_rows for each statement execute function lesson_progress_years_uncount()`.execute(db);

  // A whole organisation at once (bulk loads that skip triggers, and this migration): the year
  // rows, then the counts.
  await sql
    .raw(`create function lesson_progress_years_recount(p_org_id uuid) returns void language plpgsql as $$
    begin
      perform set_config('partner_api.counting_lesson_years', 'on', true);
      delete from lesson_progress_years where org_id = p_org_id;
      perform set_config('partner_api.counting_lesson_years', 'off', true);
      insert into lesson_progress_years (${lessonYearColumns}) ${lessonYearRows('select * from activity_intervals where org_id = p_org_id')};
    end $$`)
    .execute(db);
  const recountStatements = [
    { table: 'lesson_progress_days', period: `(last_visit_at at time zone 'Europe/Paris')::date` },
    { table: 'lesson_progress_months', period: `date_trunc('month', (last_visit_at at time zone 'Europe/Paris'))::date` },
  ].map(
    ({ table, period }) => `
    delete from ${table} where org_id = p_org_id;
    insert into ${table} (org_id, programme_id, lesson_id, period, progress_rows)
    select org_id, programme_id, lesson_id, ${period}, count(*) from lesson_progress_years where org_id = p_org_id
    group by org_id, ${period}, programme_id, lesson_id;`,
  );
  await sql
    .raw(`create function lesson_progress_counts_recount(p_org_id uuid) returns void language plpgsql as $$
    begin
      ${recountStatements.join('\n')}
    end $$`)
    .execute(db);

  const intervalEvents = [
    { event: 'insert', referencing: 'new table as changed', changed: 'select membership_id, lesson_id from changed' },
    {
      event: 'update',
      referencing: 'old table as old_rows new table as new_rows',
      changed: 'select membership_id, lesson_id from old_rows union select membership_id, lesson_id from new_rows',
    },
    { event: 'delete', referencing: 'old table as changed', changed: 'select membership_id, lesson_id from changed' },
  ];
  for (const { event, referencing, changed } of intervalEvents) {
    await sql
      .raw(`create function activity_intervals_lesson_years_${event}() returns trigger language plpgsql as $$
      declare members uuid[]; lessons uuid[];
      begin
        select array_agg(membership_id order by membership_id, lesson_id), array_agg(lesson_id order by membership_id, lesson_id) into members, lessons
        from (select distinct membership_id, lesson_id from (${changed}) c where lesson_id is not null) k;
        if members is not null then perform lesson_progress_years_refresh(members, lessons); end if;
        return null;
      end $$`)
      .execute(db);
    await sql
      .raw(`create trigger activity_intervals_lesson_years_${event} after ${event} on activity_intervals
      referencing ${referencing} for each statement execute function activity_intervals_lesson_years_${event}()`)
      .execute(db);
  }
  await sql`select lesson_progress_years_recount(id), lesson_progress_counts_recount(id) from organisations`.execute(db);

  // ---------------------------------------------------------------------------------------------
  // Enrolment years, from every fact of the programme.
  await sql`create table enrolment_years (
    membership_id uuid not null,
    programme_id uuid not null,
    year integer not null,
    enrolment_id uuid not null references programme_enrolments (id) on delete cascade,
    org_id uuid not null,
    -- The natural date of the row: its last activity up to the end of the year, else the enrolment.
    natural_at timestamptz not null,
    last_activity_at timestamptz,
    last_visit_at timestamptz,
    lessons_viewed integer not null check (lessons_viewed >= 0),
    primary key (membership_id, programme_id, year)
  )`.execute(db);
  await sql`create index enrolment_years_org_order_idx on enrolment_years (org_id, year, natural_at, enrolment_id)`.execute(db);
  await sql`create index enrolment_years_programme_order_idx on enrolment_years (programme_id, year, natural_at, enrolment_id)`.execute(db);
  await sql`create index enrolment_years_enrolment_idx on enrolment_years (enrolment_id)`.execute(db);

  const enrolmentYearColumns =
    'enrolment_id, year, org_id, membership_id, programme_id, natural_at, last_activity_at, last_visit_at, lessons_viewed';
  await sql
    .raw(`create function enrolment_years_refresh(p_enrolments uuid[]) returns void language plpgsql as $$
    begin
      ${lockEnrolments('select unnest(p_enrolments)')}
      with fresh as (${enrolmentYearRows('select * from programme_enrolments where id = any(p_enrolments)')}),
        gone as (
          delete from enrolment_years t where t.enrolment_id = any(p_enrolments)
            and not exists (select 1 from fresh f where f.enrolment_id = t.enrolment_id and f.year = t.year)
        )
      insert into enrolment_years as t (${enrolmentYearColumns}) select ${enrolmentYearColumns} from fresh order by membership_id, programme_id, year
      on conflict (membership_id, programme_id, year) do update
        set enrolment_id = excluded.enrolment_id, natural_at = excluded.natural_at, last_activity_at = excluded.last_activity_at,
          last_visit_at = excluded.last_visit_at, lessons_viewed = excluded.lessons_viewed
        where (t.enrolment_id, t.natural_at, t.last_activity_at, t.last_visit_at, t.lessons_viewed)
          is distinct from (excluded.enrolment_id, excluded.natural_at, excluded.last_activity_at, excluded.last_visit_at, excluded.lessons_viewed);
    end $$`)
    .execute(db);
  await sql
    .raw(`create function enrolment_years_recount(p_org_id uuid) returns void language plpgsql as $$
    begin
      delete from enrolment_years where org_id = p_org_id;
      insert into enrolment_years (${enrolmentYearColumns}) ${enrolmentYearRows('select * from programme_enrolments where org_id = p_org_id')};
    end $$`)
    .execute(db);

  // Each fact names its enrolment by learner and programme; attendance by learner alone (its
  // session may be gone when a cascade removes it): all of that learner's enrolments.
  const byEnrolment = (rows: string) => `select pe.id from programme_enrolments pe join (${rows}) k
    on k.membership_id = pe.membership_id and k.programme_id = pe.programme_id`;
  const byLearner = (rows: string) => `select pe.id from programme_enrolments pe where pe.membership_id in (${rows})`;
  const sources = [
    { table: 'lesson_progress_years', keys: (t: string) => byEnrolment(`select membership_id, programme_id from ${t}`) },
    { table: 'lesson_progress', keys: (t: string) => byEnrolment(`select membership_id, programme_id from ${t}`) },
    { table: 'quiz_attempts', keys: (t: string) => byEnrolment(`select membership_id, programme_id from ${t}`) },
    { table: 'documents', keys: (t: string) => byEnrolment(`select membership_id, programme_id from ${t}`) },
    { table: 'tutoring_attendance', keys: (t: string) => byLearner(`select membership_id from ${t}`) },
    // A session moved in time or to another programme (its insert has no attendance yet; its delete
    // removes its attendance, whose own trigger follows).
    {
      table: 'tutoring_sessions',
      keys: (t: string) => byLearner(`select ta.membership_id from tutoring_attendance ta where ta.session_id in (select id from ${t})`),
    },
    { table: 'programme_enrolments', keys: (t: string) => `select id from ${t}` },
  ];
  for (const { table, keys } of sources) {
    const events = [
      { event: 'insert', referencing: 'new table as new_rows', ids: keys('new_rows') },
      { event: 'update', referencing: 'old table as old_rows new table as new_rows', ids: `${keys('old_rows')} union ${keys('new_rows')}` },
      { event: 'delete', referencing: 'old table as old_rows', ids: keys('old_rows') },
    ].filter(
      ({ event }) => !(table === 'programme_enrolments' && event === 'delete') && !(table === 'tutoring_sessions' && event !== 'update'),
    );
    for (const { event, referencing, ids } of events) {
      const name = `${table}_enrolment_years_${event}`;
      await sql
        .raw(`create function ${name}() returns trigger language plpgsql as $$
        declare enrolments uuid[];
        begin
          select array_agg(distinct id) into enrolments from (${ids}) k;
          if enrolments is not null then perform enrolment_years_refresh(enrolments); end if;
          return null;
        end $$`)
        .execute(db);
      await sql
        .raw(`create trigger ${name} after ${event} on ${table}
        referencing ${referencing} for each statement execute function ${name}()`)
        .execute(db);
    }
  }
  await sql`select enrolment_years_recount(id) from organisations`.execute(db);
}

export async function down(_db: Kysely<any>): Promise<void> {
  // Not reversible in place: the old counts and copies are rebuilt by their own migrations.
  throw new Error('20261124T0000-year-slices cannot be reverted; restore a backup taken before it.');
}
