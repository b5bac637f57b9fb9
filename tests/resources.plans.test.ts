import type { CompiledQuery } from 'kysely';
import { sql } from 'kysely';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatherActivityReport } from '../db/activity-report';
import { findKeyAndCountRequests, keyAndCountStatement } from '../db/api-keys';
import { poolOf } from '../db/connection';
import { binaryCopyStatement } from '../db/copy';
import { findLearner } from '../db/learners';
import type { ResourceDefinition, ResourceFilter, RowWindow } from '../db/resources/definition';
import { learnersResource } from '../db/resources/learners';
import { allowedWindow, countResourceRows, pageRowsQuery } from '../db/resources/list';
import { textFieldsOf } from '../db/resources/rendering';
import { getSummary } from '../db/summary';
import { hashApiKey } from '../src/api-keys';
import { seededOrganisation, seededYear } from './support/learning-factories';
import { useTestDatabase } from './support/lifecycle';
import { listResource, listResourceNames } from './support/list-resources';
import { analyzedPlan, describeNode, type PlanNode, planNodes, recordingDb } from './support/statement-plans';

// Every statement a request of one organisation sends reads that organisation's rows, not the
// platform's: on a database of 20 organisations, each statement's plan (EXPLAIN ANALYZE, its SQL
// taken from the code paths the handlers call) must not scan a tenant table whole, nor read rows
// through a condition without the organisation and throw most of them away (other organisations'
// rows). The organisations are the generator's, of 60 learners each, analysed as autovacuum would
// after a load: large enough that reading one organisation's rows through an index is cheaper than
// scanning a table, which is what a plan must be able to do at any number of organisations. Tables
// of at most `tinyTablePages` pages (64 kB) are the exception: PostgreSQL rightly reads such a table
// whole rather than through an index (here the catalogue's programmes, courses and modules: 6, 8 and
// 18 rows per organisation), provided the organisation's condition is there for the index on the
// organisation that it uses once the table grows.
// Planner settings are left alone: turning sequential scans off would hide the plans it prefers.

const organisations = 20;
const learnersEach = 60;
const tinyTablePages = 8;
/** Pages of `pageSize` rows: the deep one ends at the last row. */
const pageSize = 10;
const cap = 100_000;

const database = useTestDatabase();
let orgId: string;
let readKey: string;
/** An organisation beside the same 20, holding most rows of every table: its pages must read its range all the same. */
let largestOrgId: string;
/** A connection of the API's own pool (createDb), as the requests' statements run on. */
let client: pg.PoolClient;
/** The tables holding organisations' rows (their `org_id`; accounts, by way of memberships), with their pages. */
const tenantTables = new Map<string, number>();

beforeAll(async () => {
  const seeded = [];
  for (let i = 1; i <= organisations; i++) {
    seeded.push(await seededOrganisation(database.db, { name: `Organisme ${i}`, learners: learnersEach, seed: 300 + i }));
  }
  // One in the middle, neither the first seeded nor the last.
  ({ orgId, readKey } = seeded[organisations / 2]!);
  ({ orgId: largestOrgId } = await seededOrganisation(database.db, {
    name: 'Organisme majoritaire',
    learners: (organisations * learnersEach * 3) / 2,
    seed: 400,
  }));
  await sql`analyze`.execute(database.db);
  client = await poolOf(database.db).pool.connect();
  // JIT compiles any plan past these costs unless the session turns it off, as the API's do.
  await client.query('set jit_above_cost = 0; set jit_inline_above_cost = 0; set jit_optimize_above_cost = 0');
  const tables = await client.query<{ table: string; pages: number }>(`
    select c.relname as table, c.relpages as pages from pg_class c
    where c.relkind = 'r' and c.relnamespace = 'public'::regnamespace
      and (c.relname = 'accounts' or exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'org_id' and not a.attisdropped))`);
  for (const { table, pages } of tables.rows) tenantTables.set(table, pages);
}, 300_000);

afterAll(async () => {
  // Closed rather than returned with these settings to the pool.
  client?.release(true);
});

/**
 * What in a plan reads beyond the organisation's rows: a sequential scan of a tenant table, or a
 * scan whose index condition neither names the organisation nor follows a key from a row already
 * read (`attempt_id = qa.id`), which checks the organisation in its filter and throws away most of
 * what it reads: other organisations' rows.
 */
function unboundedReads(plan: PlanNode, organisation: string): string[] {
  const organisationCondition = `org_id = '${organisation}'`;
  return planNodes(plan).flatMap((node) => {
    const table = node['Relation Name'];
    if (table === undefined || !tenantTables.has(table)) return [];
    const filter = node.Filter ?? '';
    if (node['Node Type'] === 'Seq Scan') {
      // A tiny table read whole, found by a condition an index serves once it grows: the
      // organisation's, or (api_keys, before the organisation is known) the key's hash.
      const indexable = filter.includes(organisationCondition) || (table === 'api_keys' && filter.startsWith('(key_hash ='));
      return tenantTables.get(table)! <= tinyTablePages && indexable ? [] : [`sequential scan of ${table}: ${describeNode(node)}`];
    }
    const condition = node['Index Cond'] ?? node['Recheck Cond'] ?? '';
    const bounded = condition.includes(organisationCondition) || /= [a-z_]+\.[a-z_]+\b/.test(condition);
    const removed = node['Rows Removed by Filter'] ?? 0;
    return removed > node['Actual Rows'] && !bounded && filter.includes(organisationCondition)
      ? [`rows read without the organisation's condition, most thrown away: ${describeNode(node)}`]
      : [];
  });
}

async function expectBounded(text: string, parameters: readonly unknown[] = [], organisation = orgId): Promise<void> {
  const analyzed = await analyzedPlan(client, text, parameters);
  expect(unboundedReads(analyzed.Plan, organisation), text).toEqual([]);
  expect(analyzed.JIT, `JIT compiled ${text}`).toBeUndefined();
}

async function expectEachBounded(statements: CompiledQuery[]): Promise<void> {
  const reads = statements.filter((statement) => /^\s*(\/\*.*?\*\/\s*)?(select|with|\()/is.test(statement.sql));
  expect(reads.length).toBeGreaterThan(0);
  for (const statement of reads) await expectBounded(statement.sql, statement.parameters);
}

/** The statements a call sends, recorded as sent. */
async function statementsOf(call: (db: ReturnType<typeof recordingDb>['db']) => Promise<unknown>): Promise<CompiledQuery[]> {
  const recording = recordingDb(database.url);
  try {
    await call(recording.db);
    return recording.statements;
  } finally {
    await recording.close();
  }
}

/** The SELECT inside the COPY that the API sends for these rows (a page's or an export's). */
function copiedSelect(definition: ResourceDefinition, rows: ReturnType<ResourceDefinition['select']>): string {
  return binaryCopyStatement(textFieldsOf(definition, rows))
    .replace(/^copy \(/, '')
    .replace(/\) to stdout \(format binary\)$/, '');
}

const filter = (organisation = orgId): ResourceFilter => ({
  orgId: organisation,
  year: seededYear,
  updatedSince: null,
  membershipId: null,
  programmeId: null,
});

/** A page's statements, as db/resources/list.ts sends them: its keys' (when it reads them first), then its rows' COPY. */
async function expectPageBounded(definition: ResourceDefinition, window: RowWindow, organisation = orgId): Promise<void> {
  const rows = await pageRowsQuery(database.db, definition, filter(organisation), window, async (keysQuery) => {
    const keys = keysQuery.compile();
    await expectBounded(keys.sql, keys.parameters, organisation);
    return keysQuery.execute();
  });
  await expectBounded(copiedSelect(definition, rows), [], organisation);
}

describe.each(listResourceNames)('%s', (name) => {
  const definition = (): ResourceDefinition => listResource(name);

  it('reads its first page from the organisation’s rows', async () => {
    await expectPageBounded(definition(), allowedWindow(pageSize, 0, cap)!);
  });

  it('reads its last page from the organisation’s rows', async () => {
    const { total } = await countResourceRows(database.db, definition(), filter(), cap);
    expect(total).toBeGreaterThan(pageSize);
    await expectPageBounded(definition(), allowedWindow(pageSize, total - pageSize, cap)!);
  });

  it('counts the organisation’s rows', async () => {
    await expectEachBounded(await statementsOf((db) => countResourceRows(db, definition(), filter(), cap)));
  });

  it('exports the organisation’s rows', async () => {
    await expectBounded(copiedSelect(definition(), definition().select(database.db, filter()).limit(cap)));
  });
});

// The planner weighs an index range against a whole table by the share of the table it expects to
// keep: without the sessions' random_page_cost, these pages were read through whole tables.
describe.each(listResourceNames)('%s, for an organisation holding most of every table', (name) => {
  const definition = (): ResourceDefinition => listResource(name);

  it('reads its first page from the organisation’s rows', async () => {
    const window = allowedWindow(pageSize, 0, cap)!;
    await expectPageBounded(definition(), window, largestOrgId);
  });

  it('reads its last page from the organisation’s rows', async () => {
    const { total } = await countResourceRows(database.db, definition(), filter(largestOrgId), cap);
    const window = allowedWindow(pageSize, total - pageSize, cap)!;
    await expectPageBounded(definition(), window, largestOrgId);
  });
});

describe('the other statements of a request', () => {
  it('summary, for the organisation and for one learner', async () => {
    const learner = (await findLearner(database.db, orgId, { email: await busiestLearner() }))!;
    await expectEachBounded(await statementsOf((db) => getSummary(db, orgId, null)));
    await expectEachBounded(await statementsOf((db) => getSummary(db, orgId, learner.membershipId)));
  });

  it('the activity report’s gathering', async () => {
    const learner = (await findLearner(database.db, orgId, { email: await busiestLearner() }))!;
    const statements = await statementsOf((db) =>
      gatherActivityReport(db, { orgId, orgName: 'Organisme', learner, year: seededYear, programmeId: null, generatedAt: '' }),
    );
    expect(statements.filter((statement) => /^\s*(select|with|\()/i.test(statement.sql)).length).toBe(11);
    await expectEachBounded(statements);
  });

  it('the learner lookup, by email and by user id', async () => {
    const email = await busiestLearner();
    const learner = (await findLearner(database.db, orgId, { email }))!;
    await expectEachBounded(await statementsOf((db) => findLearner(db, orgId, { email })));
    await expectEachBounded(await statementsOf((db) => findLearner(db, orgId, { userId: learner.userId })));
  });

  it('the key check and its rate limit', async () => {
    // A prepared statement, run on a pool of createDb's: its text and values as findKeyAndCountRequests sends them.
    const keyCheck = [hashApiKey(readKey), 1, 120, 60] as const;
    expect((await findKeyAndCountRequests(database.db, ...keyCheck))?.orgId).toBe(orgId);
    await expectBounded(keyAndCountStatement.text, keyCheck);
  });
});

describe('the API’s sessions', () => {
  it('run without JIT nor parallel plans, with the random page cost of cached data, on every connection of the pool', async () => {
    // Three at once, each a while on its connection: three connections.
    const sessions = await Promise.all(
      Array.from({ length: 3 }, async () => {
        const { rows } = await sql<{ jit: string; workers: string; randomPageCost: string; backend: number }>`
          select current_setting('jit') as jit, current_setting('max_parallel_workers_per_gather') as workers,
            current_setting('random_page_cost') as "randomPageCost", pg_backend_pid() as backend
          from pg_sleep(0.2)`.execute(database.db);
        return rows[0]!;
      }),
    );
    expect(new Set(sessions.map((session) => session.backend)).size).toBe(3);
    expect(sessions.map(({ jit, workers, randomPageCost }) => ({ jit, workers, randomPageCost }))).toEqual(
      Array(3).fill({ jit: 'off', workers: '0', randomPageCost: '1.1' }),
    );
  });
});

describe('the organisation’s range', () => {
  it('every table holding organisations’ rows has an index that starts with the organisation', async () => {
    const result = await client.query<{ table: string }>(`
      select c.relname as table from pg_class c
      join pg_attribute a on a.attrelid = c.oid and a.attname = 'org_id' and not a.attisdropped
      where c.relkind = 'r' and c.relnamespace = 'public'::regnamespace
        and not exists (select 1 from pg_index i where i.indrelid = c.oid and i.indkey[0] = a.attnum)
      order by 1`);
    expect(result.rows.map((row) => row.table)).toEqual([]);
  });

  it('these plans come from organisations that hold enough rows for an index to pay', async () => {
    // The tables the requests read most are many pages, and none of the learners' is tiny: one
    // organisation's share of them is a twentieth.
    for (const table of ['memberships', 'logins', 'quiz_answers', 'activity_intervals', 'tutoring_attendance', 'lesson_progress_years']) {
      expect(tenantTables.get(table), table).toBeGreaterThan(2 * tinyTablePages);
    }
    const tiny = [...tenantTables].filter(([, pages]) => pages <= tinyTablePages).map(([table]) => table);
    for (const table of ['memberships', 'accounts', 'lessons', 'quiz_questions', 'quiz_attempts', 'documents'])
      expect(tiny).not.toContain(table);
  });
});

/** The learner of the organisation with the most logins in the year: a report with rows in every section. */
async function busiestLearner(): Promise<string> {
  const rows = await learnersResource.select(database.db, filter()).execute();
  return rows.sort((a, b) => b.connexions + b.evaluations_total - (a.connexions + a.evaluations_total))[0]!.email;
}
