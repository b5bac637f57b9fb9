import { type Kysely, sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new one.
// The rate limit holds for any 60 seconds, not per clock minute: fixed windows let up to twice the
// limit through around a minute boundary. Each bucket (a key, or an address without a usable key)
// keeps its accepted requests counted per second of the database clock, for the window's seconds
// and the one before it (61 counters for 60 s: any 60 seconds lie within 61 whole seconds, so the
// sum never lets more than the limit through in any 60 seconds; a place frees at most a second
// late). One small row per bucket whatever the limit, rewritten by the statement that counts; the
// row lock of INSERT ... ON CONFLICT serialises one bucket's requests across every server process.
// Unlogged, as the fixed windows were: after a PostgreSQL crash the table starts empty, which only
// forgets the last minute.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create unlogged table rate_limit_slots (
    bucket text primary key,
    -- The second (Unix time, database clock) of the last counter.
    newest_second bigint not null,
    -- Requests accepted in each second up to newest_second, oldest first.
    counts integer[] not null,
    -- How many of its requests the last statement on this row accepted (it reads it back).
    granted integer not null
  ) with (fillfactor = 50)`.execute(db);
  await sql`drop table rate_limit_windows`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`create unlogged table rate_limit_windows (bucket text not null, window_start timestamptz not null, hits integer not null,
    constraint rate_limit_windows_pkey primary key (bucket, window_start)) with (fillfactor = 50)`.execute(db);
  await sql`drop table rate_limit_slots`.execute(db);
}
