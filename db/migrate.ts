import { type Kysely, type Migration, type MigrationProvider, Migrator } from 'kysely';
import * as m20261122T0000_platform from './migrations/20261122T0000-platform';
import * as m20261122T0100_programmes from './migrations/20261122T0100-programmes';
import * as m20261122T0200_learning from './migrations/20261122T0200-learning';
import * as m20261122T0300_webhooks from './migrations/20261122T0300-webhooks';
import * as m20261122T0500_learning_paging from './migrations/20261122T0500-learning-paging';
import * as m20261122T0600_rate_limit_unlogged from './migrations/20261122T0600-rate-limit-unlogged';
import * as m20261122T0700_progress_counts from './migrations/20261122T0700-progress-counts';
import * as m20261124T0000_year_slices from './migrations/20261124T0000-year-slices';
import * as m20261124T0100_rate_limit_sliding_window from './migrations/20261124T0100-rate-limit-sliding-window';
import * as m20261125T0000_rate_limit_running_total from './migrations/20261125T0000-rate-limit-running-total';
import * as m20261126T0000_webhook_delivery_event_type_and_fillfactor from './migrations/20261126T0000-webhook-delivery-event-type-and-fillfactor';
import * as m20261127T0000_webhook_delivery_jobs from './migrations/20261127T0000-webhook-delivery-jobs';
import * as m20261128T0000_organisation_keys from './migrations/20261128T0000-organisation-keys';
import * as m20261128T0100_organisation_foreign_keys from './migrations/20261128T0100-organisation-foreign-keys';
import * as m20261128T0200_learner_years from './migrations/20261128T0200-learner-years';
import * as m20261128T0300_quiz_answers_attempt_copies from './migrations/20261128T0300-quiz-answers-attempt-copies';
import * as m20261128T0400_management from './migrations/20261128T0400-management';
import * as m20261128T0500_webhook_failure_codes from './migrations/20261128T0500-webhook-failure-codes';

/**
 * Every migration, by name; names sort in the order they run. A static list rather than a read of
 * the folder, so that the server bundle (scripts/build.mjs) carries them: a new file of
 * db/migrations goes here too, which tests/architecture.test.ts checks.
 */
export const migrations: Record<string, Migration> = {
  '20261122T0000-platform': m20261122T0000_platform,
  '20261122T0100-programmes': m20261122T0100_programmes,
  '20261122T0200-learning': m20261122T0200_learning,
  '20261122T0300-webhooks': m20261122T0300_webhooks,
  '20261122T0500-learning-paging': m20261122T0500_learning_paging,
  '20261122T0600-rate-limit-unlogged': m20261122T0600_rate_limit_unlogged,
  '20261122T0700-progress-counts': m20261122T0700_progress_counts,
  '20261124T0000-year-slices': m20261124T0000_year_slices,
  '20261124T0100-rate-limit-sliding-window': m20261124T0100_rate_limit_sliding_window,
  '20261125T0000-rate-limit-running-total': m20261125T0000_rate_limit_running_total,
  '20261126T0000-webhook-delivery-event-type-and-fillfactor': m20261126T0000_webhook_delivery_event_type_and_fillfactor,
  '20261127T0000-webhook-delivery-jobs': m20261127T0000_webhook_delivery_jobs,
  '20261128T0000-organisation-keys': m20261128T0000_organisation_keys,
  '20261128T0100-organisation-foreign-keys': m20261128T0100_organisation_foreign_keys,
  '20261128T0200-learner-years': m20261128T0200_learner_years,
  '20261128T0300-quiz-answers-attempt-copies': m20261128T0300_quiz_answers_attempt_copies,
  '20261128T0400-management': m20261128T0400_management,
  '20261128T0500-webhook-failure-codes': m20261128T0500_webhook_failure_codes,
};

const listedMigrations: MigrationProvider = { getMigrations: async () => migrations };

/** Brings the schema to the latest migration; concurrent callers are serialised by Kysely's lock. */
export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  const migrator = new Migrator({ db, provider: listedMigrations });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error;
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
