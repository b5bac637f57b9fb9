import { type Kysely, sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new one.
// Outgoing webhooks: endpoints (an organisation's receiving URLs and their signing secrets), one
// delivery per (event, endpoint) queued in the event's transaction, and the log of every attempt.
// The delivery rows are the source of truth; pg-boss jobs only wake the worker up at the right time.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('org_id', 'uuid', (c) => c.notNull().references('organisations.id').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    // Kept as issued (`whsec_…`): the server signs with it. Shown once, at creation or rotation.
    .addColumn('secret', 'text', (c) => c.notNull())
    // After a rotation the old secret still signs (a second `v1=`) until it expires.
    .addColumn('previous_secret', 'text')
    .addColumn('previous_secret_expires_at', 'timestamptz')
    // `ping` is not subscribable: it goes to the endpoint under test only.
    .addColumn('event_types', sql`text[]`, (c) =>
      c.notNull().check(sql`cardinality(event_types) > 0 and event_types <@ array[
      'quiz.completed', 'course.started', 'programme.completed', 'learner.enrolled', 'learner.activated', 'satisfaction.submitted'
    ]::text[]`),
    )
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('consecutive_failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('disabled_at', 'timestamptz')
    .addColumn('disabled_reason', 'text', (c) => c.check(sql`disabled_reason in ('failures', 'operator')`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint('webhook_endpoints_disabled_state', sql`enabled = (disabled_at is null) and enabled = (disabled_reason is null)`)
    .execute();
  await db.schema.createIndex('webhook_endpoints_org_idx').on('webhook_endpoints').columns(['org_id', 'created_at']).execute();

  await db.schema
    .createTable('webhook_deliveries')
    // The X-Service-Delivery header: stable across retries and replays.
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('event_id', 'uuid', (c) => c.notNull().references('events.id').onDelete('cascade'))
    .addColumn('endpoint_id', 'uuid', (c) => c.notNull().references('webhook_endpoints.id').onDelete('cascade'))
    // The exact bytes sent (and signed) on every attempt.
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('pending').check(sql`status in ('pending', 'delivered', 'dead')`))
    // Attempts of the current cycle (a replay starts a new cycle); the log keeps them all.
    .addColumn('attempt_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    // A lease, not a row lock held over the HTTP call: whoever holds an unexpired lease is the
    // only sender; a crashed holder's lease runs out and another process takes the delivery over.
    .addColumn('lease_token', 'uuid')
    .addColumn('lease_expires_at', 'timestamptz')
    .addColumn('delivered_at', 'timestamptz')
    .addColumn('dead_at', 'timestamptz')
    .addColumn('replay_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    .addUniqueConstraint('webhook_deliveries_event_endpoint_key', ['event_id', 'endpoint_id'])
    .execute();
  await db.schema.createIndex('webhook_deliveries_endpoint_idx').on('webhook_deliveries').columns(['endpoint_id', 'created_at']).execute();
  // The sweeper's and the resume's search: pending deliveries by due time.
  await sql`create index webhook_deliveries_pending_idx on webhook_deliveries (next_attempt_at) where status = 'pending'`.execute(db);

  await db.schema
    .createTable('webhook_attempts')
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('delivery_id', 'uuid', (c) => c.notNull().references('webhook_deliveries.id').onDelete('cascade'))
    .addColumn('attempted_at', 'timestamptz', (c) => c.notNull())
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    // null: no HTTP answer (timeout, refused address, connection error).
    .addColumn('status_code', 'integer')
    .addColumn('succeeded', 'boolean', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('response_excerpt', 'text')
    .execute();
  await db.schema.createIndex('webhook_attempts_delivery_idx').on('webhook_attempts').columns(['delivery_id', 'attempted_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['webhook_attempts', 'webhook_deliveries', 'webhook_endpoints']) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
