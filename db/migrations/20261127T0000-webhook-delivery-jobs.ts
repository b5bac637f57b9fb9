import { type Kysely, sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new one.
// A delivery's attempts are pg-boss jobs, one per attempt, and a pending delivery names the job of
// its next attempt (`job_id`): only that job may attempt it. Leases go (the job is what guards an
// attempt), and with them the half-filled pages that kept the claim of a lease a HOT update.
// Pending deliveries recorded before name no job: the delivery queue's creation queues theirs.
// Pending deliveries without a job are few (those set aside while their endpoint is disabled, which
// enabling it queues): an index of their own.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table webhook_deliveries add column job_id uuid`.execute(db);
  await sql`alter table webhook_deliveries drop column lease_token, drop column lease_expires_at`.execute(db);
  await sql`alter table webhook_deliveries reset (fillfactor)`.execute(db);
  await sql`create index webhook_deliveries_without_job_idx on webhook_deliveries (endpoint_id) where status = 'pending' and job_id is null`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index webhook_deliveries_without_job_idx`.execute(db);
  await sql`alter table webhook_deliveries set (fillfactor = 50)`.execute(db);
  await sql`alter table webhook_deliveries add column lease_token uuid, add column lease_expires_at timestamptz`.execute(db);
  await sql`alter table webhook_deliveries drop column job_id`.execute(db);
}
