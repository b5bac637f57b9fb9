import { type Kysely, sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new one.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create extension if not exists pgcrypto`.execute(db);

  await db.schema
    .createTable('organisations')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('name', 'text', (c) => c.notNull())
    // Empty array: every email domain is allowed for enrolment.
    .addColumn('allowed_email_domains', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  // A platform account: one per email across the whole platform; `id` is the API's `user_id`.
  await db.schema
    .createTable('accounts')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('first_login_at', 'timestamptz')
    .addCheckConstraint('accounts_email_canonical', sql`email = lower(btrim(email))`)
    .execute();
  await db.schema.createIndex('accounts_email_key').unique().on('accounts').column('email').execute();

  // A learner of one organisation. `invited_at`: invitation recorded; `joined_at`: attached or
  // activated. `users.inscrit_le` is the later of the two that exists.
  await db.schema
    .createTable('memberships')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('org_id', 'uuid', (c) => c.notNull().references('organisations.id').onDelete('cascade'))
    .addColumn('account_id', 'uuid', (c) => c.notNull().references('accounts.id'))
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('actif', 'invité', 'suspendu')`))
    .addColumn('invited_at', 'timestamptz')
    .addColumn('joined_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('memberships_org_account_key', ['org_id', 'account_id'])
    .addCheckConstraint('memberships_has_a_date', sql`invited_at is not null or joined_at is not null`)
    .execute();
  await db.schema.createIndex('memberships_account_idx').on('memberships').column('account_id').execute();
  await sql`create index memberships_org_listing_idx on memberships
    (org_id, ((coalesce(joined_at, invited_at) at time zone 'Europe/Paris')::date), account_id)`.execute(db);

  await db.schema
    .createTable('licences')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('org_id', 'uuid', (c) => c.notNull().references('organisations.id').onDelete('cascade'))
    .addColumn('type', 'text', (c) => c.notNull().check(sql`type in ('standard', 'tutorat')`))
    .addColumn('status', 'text', (c) =>
      c.notNull().defaultTo('disponible').check(sql`status in ('disponible', 'attribuée', 'activée', 'révoquée')`),
    )
    .addColumn('membership_id', 'uuid', (c) => c.references('memberships.id').onDelete('set null'))
    .addColumn('assigned_at', 'timestamptz')
    .addColumn('activated_at', 'timestamptz')
    .addColumn('revoked_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    // A revoked licence keeps the learner it was revoked from (history); it frees nothing.
    .addCheckConstraint(
      'licences_holder_matches_status',
      sql`(status = 'disponible' and membership_id is null)
        or (status in ('attribuée', 'activée') and membership_id is not null)
        or status = 'révoquée'`,
    )
    .execute();
  // At most one live licence per learner: the guard that keeps concurrent enrolments honest.
  await sql`create unique index licences_one_live_per_membership on licences (membership_id)
    where status in ('attribuée', 'activée')`.execute(db);
  await sql`create index licences_available_idx on licences (org_id, type, created_at, id)
    where status = 'disponible'`.execute(db);
  await db.schema.createIndex('licences_org_idx').on('licences').columns(['org_id', 'status', 'type']).execute();
  // A learner's licences (users.licence_*): the partial unique index above serves live ones only.
  await db.schema.createIndex('licences_membership_idx').on('licences').columns(['membership_id', 'assigned_at']).execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('org_id', 'uuid', (c) => c.notNull().references('organisations.id').onDelete('cascade'))
    // SHA-256 of the whole key: the key itself is never stored.
    .addColumn('key_hash', 'bytea', (c) => c.notNull().unique())
    // The first characters, to recognise a key in a listing.
    .addColumn('key_prefix', 'text', (c) => c.notNull())
    .addColumn('label', 'text')
    .addColumn('scopes', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{read}'`))
    .addColumn('expires_at', 'timestamptz')
    .addColumn('revoked_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('api_keys_org_idx').on('api_keys').column('org_id').execute();

  // Fixed-window request counters shared by every server process on this database.
  await db.schema
    .createTable('rate_limit_windows')
    .addColumn('bucket', 'text', (c) => c.notNull())
    .addColumn('window_start', 'timestamptz', (c) => c.notNull())
    .addColumn('hits', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('rate_limit_windows_pkey', ['bucket', 'window_start'])
    .execute();
  await sql`alter table rate_limit_windows set (fillfactor = 50)`.execute(db);

  // The event store: written in the same transaction as the change that causes the event.
  await db.schema
    .createTable('events')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('org_id', 'uuid', (c) => c.notNull().references('organisations.id').onDelete('cascade'))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('data', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    .execute();
  await db.schema.createIndex('events_org_created_idx').on('events').columns(['org_id', 'created_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['events', 'rate_limit_windows', 'api_keys', 'licences', 'memberships', 'accounts', 'organisations']) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
