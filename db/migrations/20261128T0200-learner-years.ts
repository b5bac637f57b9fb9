import { type Kysely, sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new one.
// `learners` of year Y: each learner's figures of Y (DECISIONS, "The figures agree"), kept per
// learner and Paris year in learner_years by statement triggers in the transaction that writes the
// facts, as the year slices are (bulk loads that skip triggers call learner_years_recount once they
// are done). Computed per request, a page ran an aggregate per detail resource for each of its
// learners over their year of facts; it now reads one row per learner. A learner without a row for
// a year has nothing that year: zeros, and no score or survey. Each figure is that of the rows the
// detail resource lists for the learner and year:
// - connexions: `logins` (started in Y); temps_cours_min: `progress` (lesson_progress_years of Y);
// - programmes suivis / complétés: `enrollments` (enrolment_years of Y), complete when the
//   certificate was issued before the end of Y;
// - évaluations: `evaluations` (attempts of Paris day in Y), the mean of the passed scores;
// - séances, présences, temps de tutorat: `attendance` (sessions started in Y);
// - PIF and attestations: `documents` (issued in Y); satisfaction: the last `satisfaction` row of Y;
// - temps actif (and AI lab): the length of the union of Y's pieces: lesson and AI-lab intervals
//   cut at the year's bounds, tutoring intervals whole in the year their session started, counted
//   between whole minutes; in start order, a piece adds what lies beyond the latest end before it
//   (of any kind, or of its kind). A tutoring interval starts within a day of its session.

/** The rows of learner_years of the learners of `members` (a query of their `id` and `org_id`), every year at once. */
const learnerYearRows = (members: string) => `
  with members as (${members}),
  spans as (
    select ai.membership_id, ai.kind, ai.started_at, ai.ended_at, paris_year(ai.started_at) as first_year, paris_year(ai.ended_at) as last_year
    from members m
    join activity_intervals ai on ai.membership_id = m.id and ai.org_id = m.org_id
    where ai.kind <> 'tutorat'
  ),
  year_starts as (
    select n as year, paris_year_start(n) as starts
    from generate_series((select min(first_year) from spans), (select max(last_year) + 1 from spans)) n
  ),
  pieces as (
    -- An interval lasts at most a day: its piece of the year it starts in, and the piece of the next
    -- year when it runs past midnight on 31 December.
    select sp.membership_id, sp.first_year as year, sp.kind, date_trunc('minute', sp.started_at) as s,
      date_trunc('minute', least(sp.ended_at, next_year.starts)) as e
    from spans sp join year_starts next_year on next_year.year = sp.first_year + 1
    union all
    select sp.membership_id, sp.last_year, sp.kind, last_year.starts, date_trunc('minute', sp.ended_at)
    from spans sp join year_starts last_year on last_year.year = sp.last_year
    where sp.last_year > sp.first_year
    union all
    select t.membership_id, t.year, t.kind, t.s, t.e
    from (
      select ai.membership_id, paris_year(coalesce(ta.session_starts_at, ai.started_at)) as year, ai.kind, ai.started_at,
        date_trunc('minute', ai.started_at) as s, date_trunc('minute', ai.ended_at) as e
      from members m
      join activity_intervals ai on ai.membership_id = m.id and ai.org_id = m.org_id
      left join tutoring_attendance ta on ta.id = ai.attendance_id and ta.org_id = m.org_id
      where ai.kind = 'tutorat'
    ) t
    where t.started_at >= paris_year_start(t.year) - interval '1 day' and t.started_at < paris_year_start(t.year + 1) + interval '1 day'
  ),
  active as (
    select membership_id, year,
      (coalesce(extract(epoch from sum(greatest(e - greatest(s, coalesce(all_end, s)), interval '0'))), 0) / 60)::int as active_minutes,
      (coalesce(extract(epoch from sum(greatest(e - greatest(s, coalesce(lab_end, s)), interval '0')) filter (where kind = 'labia')), 0) / 60)::int
        as lab_minutes
    from (
      select membership_id, year, kind, s, e, max(e) over w as all_end, max(e) filter (where kind = 'labia') over w as lab_end
      from pieces
      where e > s
      window w as (partition by membership_id, year order by s, e rows between unbounded preceding and 1 preceding)
    ) ordered
    group by membership_id, year
  ),
  logged as (
    select lg.membership_id, paris_year(lg.started_at) as year, count(*)::int as logins
    from members m join logins lg on lg.membership_id = m.id and lg.org_id = m.org_id
    group by 1, 2
  ),
  studied as (
    select lpy.membership_id, lpy.year, sum(lpy.active_minutes)::int as course_minutes
    from members m join lesson_progress_years lpy on lpy.membership_id = m.id and lpy.org_id = m.org_id
    group by 1, 2
  ),
  followed as (
    select ey.membership_id, ey.year, count(*)::int as programmes_followed,
      count(*) filter (where exists (
        select 1 from documents c where c.membership_id = ey.membership_id and c.programme_id = ey.programme_id and c.org_id = ey.org_id
          and c.type = 'Attestation' and c.issued_at < paris_year_start(ey.year + 1)
      ))::int as programmes_completed
    from members m join enrolment_years ey on ey.membership_id = m.id and ey.org_id = m.org_id
    group by 1, 2
  ),
  evaluated as (
    select qa.membership_id, extract(year from qa.completed_day)::int as year, count(*)::int as evaluations_total,
      count(*) filter (where qa.passed)::int as evaluations_passed, round(avg(qa.score) filter (where qa.passed))::int as mean_score
    from members m join quiz_attempts qa on qa.membership_id = m.id and qa.org_id = m.org_id
    group by 1, 2
  ),
  tutored as (
    select ta.membership_id, paris_year(ta.session_starts_at) as year, count(*)::int as tutoring_sessions,
      count(*) filter (where ta.present)::int as sessions_present, sum(ta.connected_minutes)::int as tutoring_minutes
    from members m join tutoring_attendance ta on ta.membership_id = m.id and ta.org_id = m.org_id
    group by 1, 2
  ),
  issued as (
    select d.membership_id, paris_year(d.issued_at) as year, count(*) filter (where d.type = 'PIF')::int as pif_issued,
      count(*) filter (where d.type = 'Attestation')::int as certificates_issued
    from members m join documents d on d.membership_id = m.id and d.org_id = m.org_id
    group by 1, 2
  ),
  surveyed as (
    select distinct on (s.membership_id, paris_year(s.answered_at)) s.membership_id, paris_year(s.answered_at) as year,
      s.rating as satisfaction_rating, s.nps as satisfaction_nps
    from members m join satisfaction_surveys s on s.membership_id = m.id and s.org_id = m.org_id
    order by s.membership_id, paris_year(s.answered_at), s.answered_at desc, s.id desc
  ),
  years as (
    select membership_id, year from active union select membership_id, year from logged
    union select membership_id, year from studied union select membership_id, year from followed
    union select membership_id, year from evaluated union select membership_id, year from tutored
    union select membership_id, year from issued union select membership_id, year from surveyed
  )
  select y.membership_id, y.year, m.org_id,
    coalesce(lg.logins, 0) as logins, coalesce(a.active_minutes, 0) as active_minutes, coalesce(st.course_minutes, 0) as course_minutes,
    coalesce(a.lab_minutes, 0) as lab_minutes, coalesce(tu.tutoring_minutes, 0) as tutoring_minutes,
    coalesce(f.programmes_followed, 0) as programmes_followed, coalesce(f.programmes_completed, 0) as programmes_completed,
    coalesce(ev.evaluations_passed, 0) as evaluations_passed, coalesce(ev.evaluations_total, 0) as evaluations_total, ev.mean_score,
    coalesce(tu.tutoring_sessions, 0) as tutoring_sessions, coalesce(tu.sessions_present, 0) as sessions_present,
    coalesce(i.pif_issued, 0) as pif_issued, coalesce(i.certificates_issued, 0) as certificates_issued,
    su.satisfaction_rating, su.satisfaction_nps
  from years y
  join members m on m.id = y.membership_id
  left join active a on a.membership_id = y.membership_id and a.year = y.year
  left join logged lg on lg.membership_id = y.membership_id and lg.year = y.year
  left join studied st on st.membership_id = y.membership_id and st.year = y.year
  left join followed f on f.membership_id = y.membership_id and f.year = y.year
  left join evaluated ev on ev.membership_id = y.membership_id and ev.year = y.year
  left join tutored tu on tu.membership_id = y.membership_id and tu.year = y.year
  left join issued i on i.membership_id = y.membership_id and i.year = y.year
  left join surveyed su on su.membership_id = y.membership_id and su.year = y.year`;

const figures = [
  'logins',
  'active_minutes',
  'course_minutes',
  'lab_minutes',
  'tutoring_minutes',
  'programmes_followed',
  'programmes_completed',
  'evaluations_passed',
  'evaluations_total',
  'mean_score',
  'tutoring_sessions',
  'sessions_present',
  'pif_issued',
  'certificates_issued',
  'satisfaction_rating',
  'satisfaction_nps',
];
const columns = ['membership_id', 'year', 'org_id', ...figures].join(', ');

/** The facts a learner's figures come from, each naming its learner (`membership_id`). */
const sources = [
  'activity_intervals',
  'logins',
  'lesson_progress_years',
  'enrolment_years',
  'quiz_attempts',
  'tutoring_attendance',
  'documents',
  'satisfaction_surveys',
];

export async function up(db: Kysely<any>): Promise<void> {
  const counted = figures
    .filter((figure) => !['mean_score', 'satisfaction_rating', 'satisfaction_nps'].includes(figure))
    .map((figure) => `${figure} integer not null check (${figure} >= 0)`)
    .join(',\n    ');
  await sql
    .raw(`create table learner_years (
    membership_id uuid not null references memberships (id) on delete cascade,
    year integer not null,
    org_id uuid not null references organisations (id) on delete cascade,
    ${counted},
    mean_score integer,
    satisfaction_rating integer,
    satisfaction_nps integer,
    primary key (membership_id, year)
  )`)
    .execute(db);
  // A whole organisation's year (an export of `learners`) from its own rows.
  await sql`create index learner_years_org_idx on learner_years (org_id, year, membership_id)`.execute(db);

  // Serialised per learner as the year slices are per enrolment: the learner's row is locked, in id
  // order, before reading, so a refresh never writes figures computed without another transaction's
  // facts. Its triggers are named to run after the year slices' on the same table, so that every
  // writer locks enrolments before learners.
  const updates = figures.map((figure) => `${figure} = excluded.${figure}`).join(', ');
  const kept = figures.map((figure) => `t.${figure}`).join(', ');
  const fresh = figures.map((figure) => `excluded.${figure}`).join(', ');
  await sql
    .raw(`create function learner_years_refresh(p_members uuid[]) returns void language plpgsql as $$
    begin
      perform 1 from memberships where id = any(p_members) order by id for no key update;
      with fresh as (${learnerYearRows('select id, org_id from memberships where id = any(p_members)')}),
        gone as (
          delete from learner_years t where t.membership_id = any(p_members)
            and not exists (select 1 from fresh f where f.membership_id = t.membership_id and f.year = t.year)
        )
      insert into learner_years as t (${columns}) select ${columns} from fresh order by membership_id, year
      on conflict (membership_id, year) do update set ${updates}
        where (${kept}) is distinct from (${fresh});
    end $$`)
    .execute(db);
  // Memory enough to order a large organisation's intervals without writing them to disk.
  await sql
    .raw(`create function learner_years_recount(p_org_id uuid) returns void language plpgsql set work_mem = '64MB' as $$
    begin
      delete from learner_years where org_id = p_org_id;
      insert into learner_years (${columns}) ${learnerYearRows('select id, org_id from memberships where org_id = p_org_id')};
    end $$`)
    .execute(db);

  for (const table of sources) {
    const events = [
      { event: 'insert', referencing: 'new table as new_rows', members: 'select membership_id from new_rows' },
      {
        event: 'update',
        referencing: 'old table as old_rows new table as new_rows',
        members: 'select membership_id from old_rows union select membership_id from new_rows',
      },
      { event: 'delete', referencing: 'old table as old_rows', members: 'select membership_id from old_rows' },
    ];
    for (const { event, referencing, members } of events) {
      const name = `${table}_refresh_learner_years_${event}`;
      await sql
        .raw(`create function ${name}() returns trigger language plpgsql as $$
        declare members uuid[];
        begin
          select array_agg(distinct membership_id) into members from (${members}) k;
          if members is not null then perform learner_years_refresh(members); end if;
          return null;
        end $$`)
        .execute(db);
      await sql
        .raw(`create trigger ${name} after ${event} on ${table}
        referencing ${referencing} for each statement execute function ${name}()`)
        .execute(db);
    }
  }
  await sql`select learner_years_recount(id) from organisations`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of sources) {
    for (const event of ['insert', 'update', 'delete']) {
      await sql.raw(`drop trigger ${table}_refresh_learner_years_${event} on ${table}`).execute(db);
      await sql.raw(`drop function ${table}_refresh_learner_years_${event}()`).execute(db);
    }
  }
  await sql`drop function learner_years_recount(uuid)`.execute(db);
  await sql`drop function learner_years_refresh(uuid[])`.execute(db);
  await sql`drop table learner_years`.execute(db);
}
