import { sql } from 'kysely';
import type { components } from '../codegen/openapi';
import type { DB } from './connection';
import { typedColumns } from './resources/definition';

/** The `data` of the `summary` resource, as the contract defines it. */
export type Summary = components['schemas']['SummaryData'];

/** The paths of an object's leaves, joined with dots: `licences.standard.total`. */
type LeafPaths<Value, Prefix extends string = ''> = {
  [Key in keyof Value & string]: Value[Key] extends Record<string, unknown> ? LeafPaths<Value[Key], `${Prefix}${Key}.`> : `${Prefix}${Key}`;
}[keyof Value & string];

/** The `summary` as one row (CSV, workbook): the dotted paths of its leaves, in its order. */
export type SummaryRow = Record<LeafPaths<Summary>, number>;

/** The columns of that row, in order, with their types: every path of the contract, no other. */
export const summaryColumns = typedColumns<SummaryRow>({
  'utilisateurs.total': 'integer',
  'utilisateurs.actifs': 'integer',
  'licences.standard.total': 'integer',
  'licences.standard.disponibles': 'integer',
  'licences.standard.utilisees': 'integer',
  'licences.tutorat.total': 'integer',
  'licences.tutorat.disponibles': 'integer',
  'licences.tutorat.utilisees': 'integer',
});

/**
 * The organisation's counts, from the same rows as `users`: learners and their statuses, and the
 * licences by status. A revoked licence frees nothing, so it counts as used: total = available + used.
 * For one learner (membershipId), the counts of that learner and the licences they hold
 * (docs/decisions.md#figures-agree).
 */
export async function getSummary(db: DB, orgId: string, membershipId: string | null): Promise<Summary> {
  const learners = db
    .selectFrom('memberships')
    .select([sql<number>`count(*)::int`.as('total'), sql<number>`(count(*) filter (where status = 'actif'))::int`.as('actifs')])
    .where('org_id', '=', orgId)
    .$if(membershipId !== null, (q) => q.where('id', '=', membershipId!));
  const licences = db
    .selectFrom('licences')
    .select([
      'type',
      sql<number>`count(*)::int`.as('total'),
      sql<number>`(count(*) filter (where status = 'disponible'))::int`.as('disponibles'),
      sql<number>`(count(*) filter (where status <> 'disponible'))::int`.as('utilisees'),
    ])
    .where('org_id', '=', orgId)
    .$if(membershipId !== null, (q) => q.where('membership_id', '=', membershipId!))
    .groupBy('type');
  const [people, licenceRows] = await Promise.all([learners.executeTakeFirstOrThrow(), licences.execute()]);
  const byType = (type: 'standard' | 'tutorat') => {
    const row = licenceRows.find((r) => r.type === type);
    return { total: row?.total ?? 0, disponibles: row?.disponibles ?? 0, utilisees: row?.utilisees ?? 0 };
  };
  return { utilisateurs: people, licences: { standard: byType('standard'), tutorat: byType('tutorat') } };
}
