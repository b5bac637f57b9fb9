import { type Kysely, sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new one.
// Every request updates its key's bucket: as a logged table, each update wrote WAL and its commit
// waited for the WAL to reach the disk. The counters are worth a minute at most, so the table is
// unlogged: no WAL, no flush at commit. What that gives up: after a crash of PostgreSQL, or on a
// standby promoted by a failover, the table starts empty, so each key's window starts afresh once
// (at most one window of extra requests, against a server that just restarted).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table rate_limit_slots set unlogged`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table rate_limit_slots set logged`.execute(db);
}
