import { type Kysely, sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new one.
// `progress` places each lesson's block of rows by counting, per lesson, the progress rows whose
// last visit and whose enrolment fall in the requested range. Counted from lesson_progress itself
// that read every row of the organisation on each request. These tables keep the counts per Paris
// month and per Paris day: a year is 12 months per lesson, and an `updated_since` in mid-month adds
// the days up to the next month. Statement triggers keep them exact: every insert, update and
// delete of lesson_progress, bulk loads and cascades included, adds its rows and takes away the
// old ones.
const countTables = [
  { table: 'lesson_progress_days', period: 'day' },
  { table: 'lesson_progress_months', period: `date_trunc('month', day)::date` },
] as const;

export async function up(db: Kysely<any>): Promise<void> {
  for (const { table } of countTables) {
    await sql
      .raw(`create table ${table} (
      -- No foreign keys: a cascade (an organisation, a lesson deleted) empties the counts through
      -- the triggers, which drop the rows that reach zero.
      org_id uuid not null,
      programme_id uuid not null,
      lesson_id uuid not null,
      -- The Paris day, or the first day of the Paris month.
      period date not null,
      -- lesson_progress rows whose last visit is in the period
      last_visits integer not null,
      -- lesson_progress rows whose enrolment is in the period
      enrolments integer not null,
      primary key (org_id, period, programme_id, lesson_id)
    )`)
      .execute(db);
  }

  // Old rows count negatively and new rows positively; an update that moves no date writes
  // nothing. Keys are written in their order, so that concurrent writers lock them alike. A
  // statement trigger sees only the transition tables of its event: one function per event.
  const rowsOf = (table: 'old_rows' | 'new_rows', sign: -1 | 1) =>
    `select org_id, programme_id, lesson_id, last_visit_at, enrolled_at, ${sign} as sign from ${table}`;
  const events = [
    { event: 'insert', referencing: 'new table as new_rows', changed: rowsOf('new_rows', 1) },
    {
      event: 'update',
      referencing: 'old table as old_rows new table as new_rows',
      changed: `${rowsOf('old_rows', -1)} union all ${rowsOf('new_rows', 1)}`,
    },
    { event: 'delete', referencing: 'old table as old_rows', changed: rowsOf('old_rows', -1) },
  ];
  const byDay = (changed: string) => `
    select org_id, programme_id, lesson_id, (last_visit_at at time zone 'Europe/Paris')::date as day, sign as last_visits, 0 as enrolments from (${changed}) c
    union all
    select org_id, programme_id, lesson_id, (enrolled_at at time zone 'Europe/Paris')::date, 0, sign from (${changed}) c`;
  const addTo = (table: string, period: string, changed: string) => `
    insert into ${table} as t (org_id, programme_id, lesson_id, period, last_visits, enrolments)
    select org_id, programme_id, lesson_id, ${period}, sum(last_visits), sum(enrolments)
    from (${byDay(changed)}) by_day
    group by org_id, ${period}, programme_id, lesson_id
    having sum(last_visits) <> 0 or sum(enrolments) <> 0
    order by org_id, ${period}, programme_id, lesson_id
    on conflict (org_id, period, programme_id, lesson_id) do update
      set last_visits = t.last_visits + excluded.last_visits, enrolments = t.enrolments + excluded.enrolments;`;
  // After an update or a delete, the periods whose counts reached zero go.
  const dropEmptied = (table: string, period: string, changed: string) => `
    delete from ${table} t
    using (select distinct org_id, programme_id, lesson_id, ${period} as period from (${byDay(changed)}) by_day) k
    where t.org_id = k.org_id and t.period = k.period and t.programme_id = k.programme_id and t.lesson_id = k.lesson_id
      and t.last_visits = 0 and t.enrolments = 0;`;
  for (const { event, referencing, changed } of events) {
    const statements = countTables.map(
      ({ table, period }) => addTo(table, period, changed) + (event === 'insert' ? '' : dropEmptied(table, period, changed)),
    );
    await sql
      .raw(`create function lesson_progress_counts_${event}() returns trigger language plpgsql as $$
      begin
        ${statements.join('\n')}
        return null;
      end $$`)
      .execute(db);
    await sql
      .raw(`create trigger lesson_progress_counts_${event} after ${event} on lesson_progress
      referencing ${referencing} for each statement execute function lesson_progress_counts_${event}()`)
      .execute(db);
  }

  // The counts of one organisation computed afresh: the rows already there, and bulk loads that
  // skip triggers (the generator) call it once they are done.
  const statements = countTables.map(
    ({ table, period }) => `
    delete from ${table} where org_id = p_org_id;
    insert into ${table} (org_id, programme_id, lesson_id, period, last_visits, enrolments)
    select org_id, programme_id, lesson_id, ${period}, sum(last_visits), sum(enrolments)
    from (${byDay(`${rowsOf('new_rows', 1).replace('from new_rows', 'from lesson_progress')} where org_id = p_org_id`)}) by_day
    group by org_id, ${period}, programme_id, lesson_id;`,
  );
  await sql
    .raw(`create function lesson_progress_counts_recount(p_org_id uuid) returns void language plpgsql as $$
    begin
      ${statements.join('\n')}
    end $$`)
    .execute(db);
  await sql`select lesson_progress_counts_recount(id) from organisations`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const event of ['insert', 'update', 'delete']) {
    await sql.raw(`drop trigger if exists lesson_progress_counts_${event} on lesson_progress`).execute(db);
    await sql.raw(`drop function if exists lesson_progress_counts_${event}()`).execute(db);
  }
  await sql`drop function if exists lesson_progress_counts_recount(uuid)`.execute(db);
  for (const { table } of countTables) await sql.raw(`drop table if exists ${table}`).execute(db);
}
