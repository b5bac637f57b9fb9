import { type Kysely, sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new one.
// The rate limit's statement runs for every request (or batch of one key's requests), and rebuilt
// the bucket's array of 61 per-second counters and summed it on every run. The current second's
// count now has a column of its own (`current_count`, beside `counts`, the seconds before it), and
// the bucket keeps the sum (`in_window`): another request in the same second, the common case,
// only adds to two integers; the counters shift, and the seconds that leave the window are
// subtracted, at most once a second.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table rate_limit_slots
    add column current_count integer not null default 0,
    add column in_window integer not null default 0`.execute(db);
  await sql`update rate_limit_slots set
    current_count = counts[array_length(counts, 1)],
    in_window = (select coalesce(sum(c), 0) from unnest(counts) c),
    counts = counts[1:array_length(counts, 1) - 1]`.execute(db);
  // A function, not a subquery, so that the statement plans no subquery it seldom runs.
  await sql`create function rate_limit_sum(counts integer[]) returns integer language sql immutable parallel safe
    as $$ select coalesce(sum(c), 0)::int from unnest(counts) c $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function rate_limit_sum(integer[])`.execute(db);
  await sql`update rate_limit_slots set counts = counts || current_count`.execute(db);
  await sql`alter table rate_limit_slots drop column current_count, drop column in_window`.execute(db);
}
