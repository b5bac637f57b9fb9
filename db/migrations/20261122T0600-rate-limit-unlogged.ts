import { type Kysely, sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new one.
// Every authenticated request counts itself in rate_limit_windows: as a logged table, each read
// of the API would commit a WAL record and wait for its flush to disk. Unlogged, the count costs
// no WAL; after a crash PostgreSQL empties the table, which only restarts the current 60 s windows.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table rate_limit_windows set unlogged`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table rate_limit_windows set logged`.execute(db);
}
