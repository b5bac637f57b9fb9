import { type CompiledQuery, Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Database, DB } from '../../db/connection';

/**
 * A database handle that records every statement it runs, as sent (SQL and parameters): the
 * statements of the real code paths (counts, the summary, a report's gathering, lookups), for
 * EXPLAIN. Through Kysely's documented `log` hook.
 */
export function recordingDb(url: string): { db: DB; statements: CompiledQuery[]; close(): Promise<void> } {
  const statements: CompiledQuery[] = [];
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 2 }) }),
    log(event) {
      if (event.level === 'query') statements.push(event.query);
    },
  });
  return { db, statements, close: () => db.destroy() };
}

/** One node of `EXPLAIN (ANALYZE, FORMAT JSON)` as PostgreSQL writes it (the fields read here). */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Recheck Cond'?: string;
  Filter?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Total Cost': number;
  Plans?: PlanNode[];
}

/** `EXPLAIN (ANALYZE, FORMAT JSON)`'s answer: the plan, and what JIT compiled when it did. */
export interface AnalyzedStatement {
  Plan: PlanNode;
  JIT?: { Functions: number; Timing: Record<string, unknown> };
}

/** The plan of a statement, run (ANALYZE) in a transaction rolled back: a statement that writes leaves nothing. */
export async function analyzedPlan(client: pg.ClientBase, text: string, parameters: readonly unknown[] = []): Promise<AnalyzedStatement> {
  await client.query('begin');
  try {
    const result = await client.query(`explain (analyze, format json) ${text}`, [...parameters]);
    return (result.rows[0]['QUERY PLAN'] as AnalyzedStatement[])[0]!;
  } finally {
    await client.query('rollback');
  }
}

/** Every node of a plan, depth first. */
export function planNodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(planNodes)];
}

/** A node as one line, for a failure's message. */
export function describeNode(node: PlanNode): string {
  const on = node['Relation Name'] ? ` on ${node['Relation Name']}` : '';
  const using = node['Index Name'] ? ` using ${node['Index Name']}` : '';
  const condition = node['Index Cond'] ?? node['Recheck Cond'];
  return (
    `${node['Node Type']}${on}${using}: ${node['Actual Rows']} rows x ${node['Actual Loops']} loops` +
    (node['Rows Removed by Filter'] === undefined ? '' : `, ${node['Rows Removed by Filter']} removed by filter`) +
    (condition ? `; index condition ${condition}` : '') +
    (node.Filter ? `; filter ${node.Filter}` : '')
  );
}
