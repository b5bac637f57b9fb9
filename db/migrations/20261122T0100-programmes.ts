import { type Kysely, sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new one.
// Programmes (an organisation's own catalogue) and the enrolment of a learner in a programme:
// the two tables that enrolment (POST /users) and the learning data both build on.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('programmes')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('org_id', 'uuid', (c) => c.notNull().references('organisations.id').onDelete('cascade'))
    .addColumn('slug', 'text', (c) => c.notNull().check(sql`slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$'`))
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('programmes_org_slug_key', ['org_id', 'slug'])
    .execute();

  // One row per learner x programme; progress and completion are derived from the learning data.
  await db.schema
    .createTable('programme_enrolments')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('org_id', 'uuid', (c) => c.notNull().references('organisations.id').onDelete('cascade'))
    .addColumn('membership_id', 'uuid', (c) => c.notNull().references('memberships.id').onDelete('cascade'))
    .addColumn('programme_id', 'uuid', (c) => c.notNull().references('programmes.id').onDelete('cascade'))
    .addColumn('enrolled_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('programme_enrolments_member_programme_key', ['membership_id', 'programme_id'])
    .execute();
  await db.schema.createIndex('programme_enrolments_org_idx').on('programme_enrolments').columns(['org_id', 'programme_id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('programme_enrolments').ifExists().execute();
  await db.schema.dropTable('programmes').ifExists().execute();
}
