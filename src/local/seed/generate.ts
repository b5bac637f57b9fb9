import { sql } from 'kysely';
import type { DB } from '../../../db/connection';
import { findOrganisation } from '../../../db/organisations';
import { currentParisYear, formatParisDate } from '../../../db/paris-time';
import { writeBatch } from './bulk-insert';
import { ParisCalendar } from './calendar';
import { programmeTemplates } from './catalogue';
import { catalogueTables, learnerTables, learnerTablesInWriteOrder } from './generated-tables';
import { type Identity, learnerIdentities } from './learner-identities';
import { LearnerSimulation } from './learner-simulation';
import { writeCatalogue } from './organisation-catalogue';
import { hashText, Random } from './random';
import { World } from './simulation-state';
import { storyOf } from './stories';

/*
 * The data generator's entry point. Its parts, in the order a seeding runs them:
 * - organisation-catalogue.ts: the programmes, from the templates of catalogue.ts;
 * - learner-identities.ts: the learners' names and email addresses;
 * - learner-simulation.ts: what one learner does, from enrolment to today (the study of a programme
 *   in programme-study.ts, the workshops in tutoring-workshops.ts, what they share in
 *   simulation-state.ts), told by stories.ts on the days of calendar.ts;
 * - generated-tables.ts and bulk-insert.ts: the rows, gathered per table and written in bulk.
 */

export interface SeedOptions {
  orgId: string;
  learners: number;
  /** Same seed, same data (for the same `year` and, in the current year, the same day). */
  seed?: number;
  /** The last of the three calendar years generated; default: the current Paris year. */
  year?: number;
  /** Nothing happens after this instant (whole Paris days before it); default: now. */
  now?: Date;
  /** After each batch: learners done, rows written so far. */
  onProgress?: (learnersDone: number, rowsWritten: number) => void;
}

export interface SeedResult {
  org: string;
  learners: number;
  seed: number;
  programmes: string[];
  from: string;
  to: string;
  rows: Record<string, number>;
}

const learnersPerBatch = 250;

/**
 * Bulk loading skips row triggers (foreign-key checks, the enrolment-summary trigger) when the
 * database role may do so (superuser: the embedded PostgreSQL): the generator writes consistent
 * rows by construction, and the summaries are then computed once. Otherwise everything is checked.
 */
async function skipTriggersIfAllowed(trx: DB): Promise<boolean> {
  const role = await sql<{ superuser: boolean }>`select rolsuper as superuser from pg_roles where rolname = current_user`.execute(trx);
  if (!role.rows[0]?.superuser) return false;
  await sql`set local session_replication_role = replica`.execute(trx);
  return true;
}

/**
 * What the triggers maintain, for a whole organisation at once: the enrolment summaries, the year
 * slices of lessons and enrolments (in that order: enrolment years read lesson years), the counts
 * `progress` pages on, and the learners' figures of each year (which read both slices).
 */
async function refreshTriggerMaintainedRows(trx: DB, orgId: string): Promise<void> {
  await sql`update programme_enrolments pe
    set lessons_viewed = s.viewed, first_visit_at = s.first_visit, last_visit_at = s.last_visit
    from (
      select membership_id, programme_id, count(*) filter (where viewed)::int as viewed, min(first_visit_at) as first_visit, max(last_visit_at) as last_visit
      from lesson_progress where org_id = ${orgId} group by membership_id, programme_id
    ) s
    where pe.membership_id = s.membership_id and pe.programme_id = s.programme_id`.execute(trx);
  await sql`select lesson_progress_years_recount(${orgId})`.execute(trx);
  await sql`select enrolment_years_recount(${orgId})`.execute(trx);
  await sql`select lesson_progress_counts_recount(${orgId})`.execute(trx);
  await sql`select learner_years_recount(${orgId})`.execute(trx);
  await sql`set local session_replication_role = origin`.execute(trx);
}

/**
 * The generator refuses the organisation: unknown, already seeded, or a year that has not begun.
 * An operator's mistake, not a fault: the seed command prints the (French) message as is.
 */
export class SeedRefused extends Error {
  override name = 'SeedRefused';
}

/**
 * Seeds an organisation with `learners` learners and three calendar years of learning data (most
 * of it in the last two, and the year-boundary stories told on purpose, see stories.ts): the
 * catalogue, accounts, memberships and licences in every state, and what each learner did. One
 * transaction; rows are written in bulk. Historical data: no webhook event is recorded.
 */
export async function seedOrganisation(db: DB, options: SeedOptions): Promise<SeedResult> {
  const seed = options.seed ?? 1;
  const now = options.now ?? new Date();
  const year = options.year ?? currentParisYear(now);
  const organisation = await findOrganisation(db, options.orgId);
  if (!organisation) throw new SeedRefused(`Aucune organisation ${options.orgId}.`);
  const until = new Date(Math.min(now.getTime(), Date.UTC(year + 1, 0, 1) - 3600_000));
  const calendar = new ParisCalendar(year - 2, until);
  if (calendar.dayOf(year, 1, 1) >= calendar.days) throw new SeedRefused(`L’année ${year} commence dans le futur : rien à générer.`);
  await refuseIfSeeded(db, organisation.id);

  const root = new Random(seed);
  const ids = new Random(hashText(`${seed}:${organisation.id}`));
  return db.transaction().execute(async (trx) => {
    const fastLoad = await skipTriggersIfAllowed(trx);
    const programmes = await writeCatalogue(trx, organisation.id, ids, root.fork());
    const people = await learnerIdentities(trx, options.learners, root.fork(), ids, organisation.allowed_email_domains);
    const world = new World(organisation.id, calendar, programmes, learnerTables(), ids);
    await simulateLearners(trx, world, people, root, options.onProgress);
    await analyze(trx, loadedTables);
    if (fastLoad) await refreshTriggerMaintainedRows(trx, organisation.id);
    await addSpareLicences(trx, organisation.id, world.licencesUsed);
    await analyze(trx, ['licences', ...maintainedTables]);
    return {
      org: organisation.id,
      learners: people.length,
      seed,
      programmes: programmes.map((p) => p.slug),
      from: `${year - 2}-01-01`,
      to: formatParisDate(calendar.at(calendar.days - 1, 12 * 60)),
      rows: Object.fromEntries(learnerTablesInWriteOrder.map((name) => [name, world.out[name].taken])),
    };
  });
}

/** The generated programmes are already there: the organisation was seeded before. */
async function refuseIfSeeded(db: DB, orgId: string): Promise<void> {
  const existing = await db
    .selectFrom('programmes')
    .select('slug')
    .where('org_id', '=', orgId)
    .where(
      'slug',
      'in',
      programmeTemplates.map((p) => p.slug),
    )
    .execute();
  if (existing.length > 0)
    throw new SeedRefused(
      `L’organisation a déjà les programmes générés (${existing.map((p) => p.slug).join(', ')}) : elle a déjà été peuplée.`,
    );
}

/**
 * Every learner's simulation, in batches of `learnersPerBatch`: the database writes one batch while
 * the next one is generated.
 */
async function simulateLearners(
  trx: DB,
  world: World,
  people: Identity[],
  root: Random,
  onProgress: SeedOptions['onProgress'],
): Promise<void> {
  const { out } = world;
  const learnerSeeds = root.fork();
  const stories = root.fork();
  let written = 0;
  let writing: Promise<void> = Promise.resolve();
  for (let i = 0; i < people.length; i++) {
    new LearnerSimulation(world, people[i]!, storyOf(i, stories), learnerSeeds.fork()).run();
    if ((i + 1) % learnersPerBatch === 0 || i === people.length - 1) {
      const batches = learnerTablesInWriteOrder.map((name) => out[name].take());
      const done = i + 1;
      await writing;
      writing = (async () => {
        for (const batch of batches) written += await writeBatch(trx, batch);
        onProgress?.(done, written);
      })();
    }
    // Let the pending statements of the previous batch go out between learners.
    if (i % 20 === 19) await new Promise((resolve) => setImmediate(resolve));
  }
  await writing;
}

/** The tables the generator writes, and those the triggers keep from them. */
const loadedTables = [...Object.keys(catalogueTables()), ...learnerTablesInWriteOrder];
const maintainedTables = ['lesson_progress_years', 'enrolment_years', 'lesson_progress_days', 'lesson_progress_months', 'learner_years'];

/**
 * Statistics of tables just loaded, in the load's transaction (ANALYZE counts its own transaction's
 * rows), as PostgreSQL advises after a bulk load: first the generated rows, which the upkeep of the
 * derived tables reads (planned without them, learner_years_recount ran for minutes on a new
 * database), then the derived tables. Until autovacuum gathers them, the planner would take an
 * organisation that holds most of a table for one that holds nothing.
 */
async function analyze(trx: DB, tables: string[]): Promise<void> {
  await sql`analyze ${sql.join(tables.map((table) => sql.table(table)))}`.execute(trx);
}

/** Spare licences of each type, never assigned: a twentieth of those used, at least one. */
async function addSpareLicences(trx: DB, orgId: string, used: World['licencesUsed']): Promise<void> {
  for (const [type, count] of Object.entries(used)) {
    await sql`insert into licences (org_id, type) select ${orgId}, ${type} from generate_series(1, ${Math.max(1, Math.ceil(count * 0.05))})`.execute(
      trx,
    );
  }
}
